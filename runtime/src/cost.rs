//! What a declared leak costs: whether, at its rate, memory runs out within the horizon the
//! user cares about (`#[mem_guard(horizon = "8h")]`). The detector decides *whether* memory
//! grows; this decides *how bad* it is.

/// How far ahead a leak's cost is judged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum HorizonSpec {
    /// A number of iterations (loop mode) or calls (call mode).
    Iterations(u64),
    /// Seconds of wall time, converted with the measured time per iteration.
    Seconds(f64),
}

impl HorizonSpec {
    /// The default horizon: one day of wall time.
    pub const DEFAULT: HorizonSpec = HorizonSpec::Seconds(86_400.0);

    /// The horizon in iterations; `None` for a time horizon when the time per iteration is
    /// unknown (or zero).
    pub fn iterations(self, seconds_per_iteration: Option<f64>) -> Option<u64> {
        match self {
            HorizonSpec::Iterations(n) => Some(n),
            HorizonSpec::Seconds(s) => {
                let per = seconds_per_iteration.filter(|p| *p > 0.0 && p.is_finite())?;
                Some((s / per).min(u64::MAX as f64) as u64)
            }
        }
    }

    /// The horizon for people: `8.0 h`, `1000000 iterations`.
    pub fn describe(self, unit: &str) -> String {
        match self {
            HorizonSpec::Iterations(n) => format!("{n} {unit}s"),
            HorizonSpec::Seconds(s) => crate::report::human_seconds(s),
        }
    }
}

/// How bad a declared leak is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// Memory runs out within the horizon, or no limit is known to tell.
    Error,
    /// Memory grows for sure, but at this rate it runs out only beyond the horizon.
    Warning,
}

impl Severity {
    /// The name used in reports: `error` or `warning`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// Horizons beyond which a growth's projected exhaustion makes it negligible.
pub const NEGLIGIBLE_HORIZONS: u64 = 10;

/// Whether a confirmed growth costs nothing worth reporting: at its rate memory runs out only
/// after more than [`NEGLIGIBLE_HORIZONS`] horizons (e.g. a few bytes per iteration).
pub fn negligible(to_exhaustion: Option<u64>, horizon: Option<u64>) -> bool {
    match (to_exhaustion, horizon) {
        (Some(left), Some(horizon)) => left / NEGLIGIBLE_HORIZONS > horizon,
        _ => false,
    }
}

/// The severity of a leak projected to exhaust memory in `to_exhaustion` iterations, judged
/// against a horizon of `horizon` iterations. Unknown figures count as the worse case.
pub fn severity(to_exhaustion: Option<u64>, horizon: Option<u64>) -> Severity {
    match (to_exhaustion, horizon) {
        (Some(left), Some(horizon)) if left > horizon => Severity::Warning,
        _ => Severity::Error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn horizons_in_iterations() {
        assert_eq!(HorizonSpec::Iterations(1000).iterations(None), Some(1000));
        assert_eq!(HorizonSpec::Seconds(3600.0).iterations(Some(0.5)), Some(7200));
        assert_eq!(HorizonSpec::Seconds(3600.0).iterations(None), None);
        assert_eq!(HorizonSpec::Seconds(3600.0).iterations(Some(0.0)), None);
        assert_eq!(HorizonSpec::DEFAULT.describe("iteration"), "24.0 h");
        assert_eq!(HorizonSpec::Iterations(5).describe("call"), "5 calls");
    }

    #[test]
    fn severity_against_the_horizon() {
        // 64 KiB per iteration with 60 GiB free: ~983,040 iterations to exhaustion.
        let left = Some(60 * 1024 * 1024 / 64);
        assert_eq!(severity(left, Some(1_000_000)), Severity::Error);
        assert_eq!(severity(left, Some(100_000)), Severity::Warning);
        assert_eq!(severity(None, Some(100_000)), Severity::Error);
        assert_eq!(severity(left, None), Severity::Error);
        assert_eq!(Severity::Warning.as_str(), "warning");
        assert!(negligible(Some(4_852_068_405), Some(3_838_103)));
        assert!(!negligible(Some(30_000_000), Some(3_838_103)));
        assert!(!negligible(None, Some(3_838_103)));
    }
}
