//! Host memory: the [`TrackingAllocator`]'s counters when it is installed, else the resident set
//! size from `/proc/self/statm`.

use crate::TrackingAllocator;
use crate::sampler::{BackendKind, Capacity, Reading, Sample, SampleError};

/// The host backend for this process: allocator counters when available, else RSS.
pub fn open() -> Box<dyn Sample> {
    if TrackingAllocator::is_installed() {
        Box::new(AllocatorSampler)
    } else {
        Box::new(RssSampler { page_size: page_size() })
    }
}

/// The allocator's counters (only meaningful when it is installed).
pub fn open_allocator() -> Box<dyn Sample> {
    Box::new(AllocatorSampler)
}

/// The resident set size.
pub fn open_rss() -> Box<dyn Sample> {
    Box::new(RssSampler { page_size: page_size() })
}

/// Reads [`TrackingAllocator::stats`].
#[derive(Debug)]
pub struct AllocatorSampler;

impl Sample for AllocatorSampler {
    fn kind(&self) -> BackendKind {
        BackendKind::HostAllocator
    }

    fn device(&self) -> String {
        "host".to_owned()
    }

    fn begin_iteration(&mut self) {
        TrackingAllocator::reset_window_peak();
    }

    fn read(&mut self) -> Result<Reading, SampleError> {
        let stats = TrackingAllocator::stats();
        Ok(Reading {
            allocated: stats.current_bytes,
            reserved: None,
            peak: Some(stats.window_peak_bytes.max(stats.current_bytes)),
        })
    }

    fn capacity(&mut self) -> Option<Capacity> {
        host_capacity()
    }
}

/// Reads the resident set size.
#[derive(Debug)]
pub struct RssSampler {
    /// Bytes per page, for `statm`'s page counts.
    page_size: u64,
}

impl Sample for RssSampler {
    fn kind(&self) -> BackendKind {
        BackendKind::HostRss
    }

    fn device(&self) -> String {
        "host".to_owned()
    }

    fn begin_iteration(&mut self) {}

    fn read(&mut self) -> Result<Reading, SampleError> {
        let pages = resident_pages()?;
        Ok(Reading { allocated: pages.saturating_mul(self.page_size), reserved: None, peak: None })
    }

    fn capacity(&mut self) -> Option<Capacity> {
        host_capacity()
    }
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 { size as u64 } else { 4096 }
}

/// The second field of `/proc/self/statm`: resident pages.
fn resident_pages() -> Result<u64, SampleError> {
    let text = std::fs::read_to_string("/proc/self/statm")
        .map_err(|e| SampleError(format!("cannot read /proc/self/statm: {e}")))?;
    parse_statm_resident(&text).ok_or_else(|| SampleError(format!("unexpected /proc/self/statm contents: {text:?}")))
}

fn parse_statm_resident(text: &str) -> Option<u64> {
    text.split_ascii_whitespace().nth(1)?.parse().ok()
}

/// `MemAvailable` and `MemTotal` from `/proc/meminfo`.
fn host_capacity() -> Option<Capacity> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    parse_meminfo(&text)
}

fn parse_meminfo(text: &str) -> Option<Capacity> {
    let field = |name: &str| -> Option<u64> {
        let line = text.lines().find(|l| l.starts_with(name))?;
        let kib: u64 = line[name.len()..].trim().trim_end_matches("kB").trim().parse().ok()?;
        Some(kib * 1024)
    };
    Some(Capacity { available: field("MemAvailable:")?, total: field("MemTotal:")? })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statm_second_field_is_resident_pages() {
        assert_eq!(parse_statm_resident("2306 1031 611 2 0 280 0\n"), Some(1031));
        assert_eq!(parse_statm_resident("2306"), None);
        assert_eq!(parse_statm_resident(""), None);
    }

    #[test]
    fn meminfo_fields_in_bytes() {
        let text = "MemTotal:       24000000 kB\nMemFree:  1 kB\nMemAvailable:   23000000 kB\n";
        assert_eq!(parse_meminfo(text), Some(Capacity { available: 23_000_000 * 1024, total: 24_000_000 * 1024 }));
        assert_eq!(parse_meminfo("MemTotal: 5 kB\n"), None);
    }

    #[test]
    fn rss_of_this_process_is_readable_on_linux() {
        if cfg!(target_os = "linux") {
            let mut rss = RssSampler { page_size: page_size() };
            let reading = rss.read().expect("statm readable on Linux");
            assert!(reading.allocated > 0);
        }
    }
}
