//! `cargo memlint explain <rule>`.

use std::process::ExitCode;

use crate::args::ExplainArgs;

pub fn run(args: &ExplainArgs) -> miette::Result<ExitCode> {
    match memlint_lint::rules::find(&args.rule) {
        Some(meta) => {
            println!("memlint::{}: {}\n", meta.id, meta.summary);
            match meta.group.name() {
                Some(group) => println!(
                    "Default level: off ({group}: turn it on with `-W memlint::{}` or `-W {group}`; {} when on)\n",
                    meta.id,
                    meta.default_level.as_str()
                ),
                None => println!("Default level: {}\n", meta.default_level.as_str()),
            }
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
