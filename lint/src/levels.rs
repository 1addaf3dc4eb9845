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
        // Whether the rule is allowed only because `warnings` silenced it: a later `warnings`
        // override brings it back (`-A warnings -W warnings` leaves every rule at warn), while a
        // rule allowed by name stays allowed.
        let mut silenced_by_warnings = false;
        for (name, l) in &self.overrides {
            if name == rule {
                level = *l;
                silenced_by_warnings = false;
            } else if name == "warnings" && (level >= Level::Warn || silenced_by_warnings) {
                // `-D warnings` raises every warning; `-A warnings` silences them.
                level = *l;
                silenced_by_warnings = *l == Level::Allow;
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

    #[test]
    fn warnings_can_be_silenced_and_restored() {
        let mut l = Levels::default();
        l.set("warnings", Level::Allow);
        assert_eq!(l.level("rc_cycle", Level::Warn), Level::Allow);
        l.set("warnings", Level::Warn);
        assert_eq!(l.level("rc_cycle", Level::Warn), Level::Warn);
        // A rule allowed by name is not brought back by `warnings`.
        let mut l = Levels::default();
        l.set("rc_cycle", Level::Allow);
        l.set("warnings", Level::Allow);
        l.set("warnings", Level::Deny);
        assert_eq!(l.level("rc_cycle", Level::Warn), Level::Allow);
        assert_eq!(l.level("missing_zero_grad", Level::Warn), Level::Deny);
    }
}
