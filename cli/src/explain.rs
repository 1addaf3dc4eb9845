//! `cargo memlint explain <rule>`.

use std::process::ExitCode;

use crate::args::ExplainArgs;

pub fn run(args: &ExplainArgs) -> miette::Result<ExitCode> {
    match memlint_lint::rules::find(&args.rule) {
        Some(meta) => {
            println!("memlint::{}: {}\n", meta.id, meta.summary);
            println!("Default level: {}\n", meta.default_level.as_str());
            print!("{}", meta.docs);
            Ok(ExitCode::SUCCESS)
        }
        None => {
            let known: Vec<&str> = memlint_lint::rules::all_meta().iter().map(|m| m.id).collect();
            Err(miette::miette!(
                code = "memlint::unknown_rule",
                help = format!("known rules: {}", known.join(", ")),
                "no rule named `{}`",
                args.rule
            ))
        }
    }
}
