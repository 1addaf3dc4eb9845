//! `cargo run -p memlint-report --example render -- <report.json> [--html F] [--perfetto F]`:
//! what `cargo memlint report` does, without the CLI.

fn main() {
    match memlint_report::command::Request::parse(std::env::args().skip(1)).and_then(|r| r.run()) {
        Ok(text) => print!("{text}"),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    }
}
