//! Writes the reports of guarded runs off the loop's thread.
//!
//! A report costs its serialisation and file write: about 5 ms for a 30,000-iteration report on
//! the GPU machine, a few hundred microseconds for a 300-iteration one with its phase records,
//! which is more than the guard's whole budget for a short call (0.1 % of a 300-step call of
//! 1.7 ms steps is 510 µs). One process-wide thread takes the writes in order: those made while
//! the run goes on (at 256, 512, … iterations, or when a leak is found) and the final report of a
//! run. Writes to one path that are queued behind each other are merged (only the newest is
//! written). The queue is drained at process exit (an `atexit` handler, registered with the
//! thread) and by [`wait_for_reports`], so a report is never lost when the process ends normally;
//! a run that ends in a panic writes its report on its own thread ([`write_now`]).
//!
//! ```text
//!  loop thread ── write_later(path, report) ──► channel ──► memlint-writer thread ── write_atomic
//!  loop thread ── write_now(path, report): wait until the channel is drained ── write_atomic
//!  exit / wait_for_reports(): wait until the channel is drained
//! ```

use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::{Mutex, OnceLock};

use crate::report::{Report, write_atomic};

enum Job {
    Write(PathBuf, Box<Report>),
    /// Answered once every job sent before it is done.
    Drained(SyncSender<()>),
}

/// The writer thread's queue; `None` when the thread could not be started (then every write is
/// made on the caller's thread).
fn queue() -> Option<&'static Mutex<Sender<Job>>> {
    static QUEUE: OnceLock<Option<Mutex<Sender<Job>>>> = OnceLock::new();
    QUEUE
        .get_or_init(|| {
            let (tx, rx) = mpsc::channel();
            std::thread::Builder::new().name("memlint-writer".into()).spawn(move || serve(rx)).ok()?;
            // SAFETY: registers a plain `extern "C"` function without arguments.
            unsafe { libc::atexit(drain_at_exit) };
            Some(Mutex::new(tx))
        })
        .as_ref()
}

extern "C" fn drain_at_exit() {
    let _ = std::panic::catch_unwind(wait_for_reports);
}

fn serve(rx: Receiver<Job>) {
    while let Ok(first) = rx.recv() {
        // Everything queued now, in order: a write followed by a newer write to the same path
        // (with no `wait_for_reports` between them) is superseded and skipped.
        let mut jobs = vec![first];
        jobs.extend(rx.try_iter());
        for i in 0..jobs.len() {
            match &jobs[i] {
                Job::Write(path, report) => {
                    let superseded = jobs[i + 1..]
                        .iter()
                        .take_while(|j| matches!(j, Job::Write(..)))
                        .any(|j| matches!(j, Job::Write(p, _) if p == path));
                    if !superseded && let Err(e) = write_atomic(path, report) {
                        crate::guard::notice_once(&format!("memlint: cannot write report {}: {e}", path.display()));
                    }
                }
                Job::Drained(done) => {
                    let _ = done.send(());
                }
            }
        }
    }
}

/// Hands `report` to the writer thread (or writes it here when there is none).
pub fn write_later(path: PathBuf, report: Report) {
    let job = Job::Write(path, Box::new(report));
    let job = match queue() {
        Some(q) => match q.lock().unwrap_or_else(|p| p.into_inner()).send(job) {
            Ok(()) => return,
            Err(mpsc::SendError(job)) => job,
        },
        None => job,
    };
    if let Job::Write(path, report) = job
        && let Err(e) = write_atomic(&path, &report)
    {
        crate::guard::notice_once(&format!("memlint: cannot write report {}: {e}", path.display()));
    }
}

/// Waits until every report handed over before has been written, then writes `report` here.
pub fn write_now(path: &std::path::Path, report: &Report) -> std::io::Result<()> {
    wait_for_reports();
    write_atomic(path, report)
}

/// Waits until every report handed over so far is on disk: reports are written by a background
/// thread, so a guarded function returns before its final report is written. Call this before
/// reading a report in the process that wrote it; at process exit it is done for you.
pub fn wait_for_reports() {
    let Some(q) = queue() else { return };
    let (done, wait) = mpsc::sync_channel(1);
    let sent = q.lock().unwrap_or_else(|p| p.into_inner()).send(Job::Drained(done)).is_ok();
    if sent {
        let _ = wait.recv();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(outcome: &'static str, iterations: u64) -> Report {
        let mut r = crate::guard::tests::empty_report();
        r.outcome = outcome;
        r.iterations = iterations;
        r
    }

    #[test]
    fn the_final_report_lands_after_every_earlier_one() {
        let dir = std::env::temp_dir().join(format!("memlint-writer-{}", std::process::id()));
        let path = dir.join("run.json");
        for i in 0..50 {
            write_later(path.clone(), report("running", i));
        }
        write_now(&path, &report("returned", 50)).expect("written");
        // Anything still queued would land after the final report and replace it.
        wait_for_reports();
        let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(json["outcome"], "returned");
        assert_eq!(json["iterations"], 50);
        let _ = std::fs::remove_dir_all(dir);
    }
}
