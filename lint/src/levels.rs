//! Rule levels from the command line (`-D`, `-W`, `-A`), applied in order like rustc's.

use crate::diagnostic::Level;

/// A level override: a rule id or `warnings` (every rule at warn level or above).
#[derive(Debug, Clone, Default)]
pub struct Levels {
    overrides: Vec<(String, Level)>,
}

impl Levels {
    /// Adds an override; later ones win. `name` is a rule id, `memlint::<id>`, or `warnings`.
    pub fn set(&mut self, name: &str, level: Level) {
        let name = name.strip_prefix("memlint::").unwrap_or(name);
        self.overrides.push((name.to_string(), level));
    }

    /// The level of `rule` given its default.
    pub fn level(&self, rule: &str, default: Level) -> Level {
        let mut level = default;
        for (name, l) in &self.overrides {
            if name == rule {
                level = *l;
            } else if name == "warnings" && level >= Level::Warn {
                // `-D warnings` raises every warning; `-A warnings` silences them.
                level = *l;
            }
        }
        level
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_overrides_win_and_warnings_covers_all() {
        let mut l = Levels::default();
        l.set("warnings", Level::Deny);
        assert_eq!(l.level("rc_cycle", Level::Warn), Level::Deny);
        l.set("memlint::rc_cycle", Level::Allow);
        assert_eq!(l.level("rc_cycle", Level::Warn), Level::Allow);
        assert_eq!(l.level("missing_zero_grad", Level::Warn), Level::Deny);
    }
}
