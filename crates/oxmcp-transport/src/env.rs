//! The environment a child server starts with: by default a small safe set taken from ours
//! plus the variables its configuration names, the way MCP hosts start servers, so that
//! credentials in our environment (API keys, tokens) do not reach every server we spawn.

use std::ffi::{OsStr, OsString};

use tokio::process::Command;

/// Variables passed on by [`Inherit::Safe`], besides every `LC_*`: what a shell, a locale-aware
/// program or an interpreter needs to run, and nothing that usually holds a secret.
pub const SAFE_VARS: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "TZ", "TMPDIR",
];

/// What a child takes from this process's environment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Inherit {
    /// Only [`SAFE_VARS`] and `LC_*` (the default).
    #[default]
    Safe,
    /// All of it: the child is trusted with everything this process holds.
    All,
    /// Nothing.
    Nothing,
}

/// The environment of a child process: what it inherits, then `vars` on top (they win).
#[derive(Debug, Clone, Default)]
pub struct ChildEnv {
    /// What is taken from this process's environment.
    pub inherit: Inherit,
    /// Set on top of what is inherited, in order.
    pub vars: Vec<(OsString, OsString)>,
}

impl ChildEnv {
    /// The safe set only (the default).
    pub fn safe() -> Self {
        Self::default()
    }

    /// This process's whole environment.
    pub fn inherit_all() -> Self {
        Self {
            inherit: Inherit::All,
            vars: Vec::new(),
        }
    }

    /// Adds (or overrides) one variable.
    #[must_use]
    pub fn var(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.vars.push((key.into(), value.into()));
        self
    }

    /// The variables the child starts with, given this process's environment.
    pub fn resolve(
        &self,
        ours: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> Vec<(OsString, OsString)> {
        let mut out: Vec<(OsString, OsString)> = match self.inherit {
            Inherit::All => ours.into_iter().collect(),
            Inherit::Safe => ours.into_iter().filter(|(k, _)| is_safe(k)).collect(),
            Inherit::Nothing => Vec::new(),
        };
        for (k, v) in &self.vars {
            out.retain(|(have, _)| have != k);
            out.push((k.clone(), v.clone()));
        }
        out
    }

    /// Sets `cmd`'s environment to [`ChildEnv::resolve`] of ours.
    pub(crate) fn apply(&self, cmd: &mut Command) {
        if self.inherit == Inherit::All {
            cmd.envs(self.vars.iter().map(|(k, v)| (k, v)));
            return;
        }
        cmd.env_clear();
        cmd.envs(self.resolve(std::env::vars_os()));
    }
}

/// Whether [`Inherit::Safe`] passes `name` on.
pub fn is_safe(name: &OsStr) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    SAFE_VARS.contains(&name) || name.starts_with("LC_")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(v: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        v.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect()
    }

    #[test]
    fn the_safe_set_keeps_what_programs_need_and_drops_the_rest() {
        let ours = pairs(&[
            ("PATH", "/bin"),
            ("HOME", "/home/u"),
            ("LC_ALL", "C"),
            ("LANG", "C.UTF-8"),
            ("AWS_SECRET_ACCESS_KEY", "s"),
            ("GITHUB_TOKEN", "t"),
            ("PATHX", "no"),
        ]);
        let env = ChildEnv::safe().var("API_KEY", "given").var("HOME", "/srv");
        let got = env.resolve(ours.clone());
        assert_eq!(
            got,
            pairs(&[
                ("PATH", "/bin"),
                ("LC_ALL", "C"),
                ("LANG", "C.UTF-8"),
                ("API_KEY", "given"),
                ("HOME", "/srv"),
            ])
        );
        assert_eq!(ChildEnv::inherit_all().resolve(ours.clone()), ours);
        let none = ChildEnv {
            inherit: Inherit::Nothing,
            vars: pairs(&[("A", "1")]),
        };
        assert_eq!(none.resolve(ours), pairs(&[("A", "1")]));
    }
}
