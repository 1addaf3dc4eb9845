//! Rule levels from the command line (`-D`, `-W`, `-A`), applied in order like rustc's.

use crate::diagnostic::Level;
use crate::rule::RuleMeta;

/// A level override: a rule id, `warnings` (every rule at warn level or above) or a group
/// (`nursery`: the rules off by default).
#[derive(Debug, Clone, Default)]
pub struct Levels {
    overrides: Vec<(String, Level)>,
}

impl Levels {
    /// Adds an override; later ones win. `name` is a rule id, `memlint::<id>`, `warnings`, or
    /// a group (`nursery`).
    pub fn set(&mut self, name: &str, level: Level) {
        let name = name.strip_prefix("memlint::").unwrap_or(name);
        self.overrides.push((name.to_string(), level));
    }

    /// The level of a rule: its initial level (allow in the nursery), then the overrides.
    pub fn level_of(&self, rule: &RuleMeta) -> Level {
        self.resolve(rule.id, rule.group.name(), rule.initial_level())
    }

    /// The level of `rule` given its default, for a rule outside every group.
    pub fn level(&self, rule: &str, default: Level) -> Level {
        self.resolve(rule, None, default)
    }

    fn resolve(&self, rule: &str, group: Option<&str>, initial: Level) -> Level {
        let mut level = initial;
        // Whether the rule is allowed only because `warnings` silenced it: a later `warnings`
        // override brings it back (`-A warnings -W warnings` leaves every rule at warn), while a
        // rule allowed by name stays allowed.
        let mut silenced_by_warnings = false;
        for (name, l) in &self.overrides {
            if name == rule || group == Some(name.as_str()) {
                level = *l;
                silenced_by_warnings = false;
            } else if name == "warnings" && (level >= Level::Warn || silenced_by_warnings) {
                // `-D warnings` raises every warning; `-A warnings` silences them. A rule that
                // is off (a nursery rule not asked for) stays off, as in rustc.
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

    #[test]
    fn nursery_rules_are_off_until_asked_for() {
        use crate::rule::Group;
        let nursery = RuleMeta { id: "x", summary: "", docs: "", default_level: Level::Warn, group: Group::Nursery };
        let stable = RuleMeta { group: Group::Stable, id: "y", ..nursery };
        let mut l = Levels::default();
        l.set("warnings", Level::Deny);
        assert_eq!(l.level_of(&nursery), Level::Allow, "`-D warnings` does not turn it on");
        assert_eq!(l.level_of(&stable), Level::Deny);
        l.set("nursery", Level::Warn);
        assert_eq!(l.level_of(&nursery), Level::Warn);
        l.set("warnings", Level::Deny);
        assert_eq!(l.level_of(&nursery), Level::Deny, "on, it is a warning like any other");
        let mut by_id = Levels::default();
        by_id.set("memlint::x", Level::Warn);
        assert_eq!(by_id.level_of(&nursery), Level::Warn);
    }
}
