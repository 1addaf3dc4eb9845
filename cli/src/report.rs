//! `cargo memlint report <report.json> [--html FILE] [--perfetto FILE]`: renders a JSON report of
//! `#[mem_guard]` with the `memlint-report` crate.

use std::process::ExitCode;

use crate::args::ReportArgs;

/// Prints the summary and writes the requested files; exit status 2 when the report cannot be
/// read or an output cannot be written.
pub fn run(args: &ReportArgs) -> ExitCode {
    let request = memlint_report::command::Request {
        report: args.report.clone(),
        html: args.html.clone(),
        perfetto: args.perfetto.clone(),
    };
    match request.run() {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
