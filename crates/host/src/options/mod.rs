//! The one table of user-facing options: each option's flag, environment variable, value
//! type, default, range and help, as plain data ([`OPTIONS`]).
//!
//! The command line builds its flags from it (names, variables, defaults, help), the drop-in
//! reads its `AGENT_WATCHDOG_*` variables through the same flags, the SDK helpers write a
//! session's policy as those variables through it ([`env_for`], by the bindings), and the tests
//! check the tables of docs/cli.md against it. A default is not written
//! here: it is rendered from the typed value it stands for (`Limits::default()`, the
//! supervisor's, recovery's, telemetry's), as the option's parser reads it
//! ([`OptionSpec::default_value`]).
//!
//! ```
//! use watchdog_host::options::{self, ValueKind};
//! let idle = options::find("idle").unwrap();
//! assert_eq!(idle.flag, Some("idle"));
//! assert_eq!(idle.env, "AGENT_WATCHDOG_IDLE");
//! assert_eq!(idle.kind, ValueKind::PositiveDuration);
//! assert_eq!(idle.default_value(), Some("10m"));
//! assert_eq!(idle.range(), "a duration > 0");
//! assert!(idle.kind.check("0s").is_err());
//! // Every variable is the prefix and the name in capitals.
//! for o in options::OPTIONS {
//!     assert_eq!(o.env, format!("{}{}", options::ENV_PREFIX, o.name.to_uppercase()));
//! }
//! ```

use std::sync::LazyLock;

mod policy;
mod spec;
mod table;

pub use policy::*;
pub use spec::*;
pub use table::*;

/// The option named `name` (snake case).
pub fn find(name: &str) -> Option<&'static OptionSpec> {
    OPTIONS.iter().find(|o| o.name == name)
}

/// The option whose long flag is `flag` (without `--`).
pub fn by_flag(flag: &str) -> Option<&'static OptionSpec> {
    OPTIONS.iter().find(|o| o.flag == Some(flag))
}

/// The option read from the environment variable `env`.
pub fn by_env(env: &str) -> Option<&'static OptionSpec> {
    OPTIONS.iter().find(|o| o.env == env)
}

impl OptionSpec {
    /// The default as the option's parser reads it (`10m`), rendered once from its typed
    /// value; `None` when the option has no value by default.
    pub fn default_value(&self) -> Option<&'static str> {
        /// Each row's rendered default, in the order of [`OPTIONS`].
        static RENDERED: LazyLock<Vec<Option<String>>> = LazyLock::new(|| {
            OPTIONS
                .iter()
                .map(|o| match o.default {
                    OptionDefault::Value(render) => render(),
                    OptionDefault::Unset | OptionDefault::Described(_) => None,
                })
                .collect()
        });
        let i = OPTIONS.iter().position(|o| o.name == self.name)?;
        RENDERED[i].as_deref()
    }

    /// The default as the docs write it: the value, `off` for a switch without one, `none`
    /// for any other option without one, or the description.
    ///
    /// ```
    /// use watchdog_host::options;
    /// assert_eq!(options::find("ceiling").unwrap().default_text(), "none");
    /// assert_eq!(options::find("strict").unwrap().default_text(), "off");
    /// assert_eq!(options::find("grace").unwrap().default_text(), "5s");
    /// ```
    pub fn default_text(&self) -> &'static str {
        if let OptionDefault::Described(d) = self.default {
            return d;
        }
        match (self.default_value(), self.kind) {
            (Some(v), _) => v,
            (None, ValueKind::Switch) => "off",
            (None, _) => "none",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every rendered default is read back by its option's parser (the rule of its kind).
    #[test]
    fn every_rendered_default_is_read_by_its_parser() {
        let mut rendered = 0;
        for o in OPTIONS {
            if let Some(v) = o.default_value() {
                o.kind
                    .check(v)
                    .unwrap_or_else(|e| panic!("{}: {v:?}: {e}", o.name));
                rendered += 1;
            }
        }
        assert!(rendered >= 13, "{rendered} options have a default value");
    }

    #[test]
    fn names_flags_and_variables_are_unique_and_agree() {
        for (i, o) in OPTIONS.iter().enumerate() {
            assert!(OPTIONS[..i]
                .iter()
                .all(|p| p.name != o.name && p.env != o.env));
            if let Some(flag) = o.flag {
                assert_eq!(flag.replace('-', "_"), o.name, "{}", o.name);
                assert_eq!(by_flag(flag).map(|p| p.name), Some(o.name));
            }
            assert_eq!(
                o.value_name.is_none(),
                o.kind == ValueKind::Switch || o.flag.is_none()
            );
            assert!(
                !o.help.ends_with('.') && !o.help.contains('\n'),
                "{}",
                o.name
            );
            assert_eq!(find(o.name).map(|p| p.env), Some(o.env));
            assert_eq!(by_env(o.env).map(|p| p.name), Some(o.name));
        }
    }
}
