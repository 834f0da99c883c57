//! The configuration file, `rtype-inspect.toml`: read once, merged with the command line, and the
//! same for every command that reads captures.
//!
//! ```toml
//! profile = "reference-17byte"        # a bundled profile, or a file relative to this one
//! snapshot_hz = 60                    # nominal snapshot rate (session.snapshot-rate)
//! snapshot_tolerance = 20             # percent
//! stall_multiple = 3                  # a gap over 3 periods of a stream is a stall
//! fail_on = "warning"                 # check: error (default), warning or info
//! allow = ["rtype.pong.empty"]        # check: rule IDs whose findings never fail
//! diff_only = ["field."]              # diff: the figures judged (default: the headline)
//!
//! [budgets]                           # check: limits per conversation (see [`Budgets`])
//! snapshot_kbps_per_client = 256
//! datagram_bytes_max = 1200
//! snapshot_gap_ms_max = 100
//!
//! [profiles]                          # a profile per capture file name (`*` and `?`): the
//! "*-15byte*" = "reference-15byte"    # first that matches, in file order, when no --profile
//! "lab-*.pcap" = "profiles/lab.toml"  # is given; else `profile` above
//! ```
//!
//! Unknown keys, unknown rule IDs and values out of range are errors naming the file and the key.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::proto::{Rule, Severity};
pub use crate::tally::budget::Budgets;

/// The file looked for in the working directory when `--config` is not given.
pub const CONFIG_FILE: &str = "rtype-inspect.toml";
/// Largest configuration file read (a bounded read: /dev/zero or a pipe cannot exhaust memory).
const MAX_CONFIG: u64 = 1 << 20;

/// The file's keys, as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    fail_on: Option<String>,
    #[serde(default)]
    allow: Vec<String>,
    profile: Option<String>,
    snapshot_hz: Option<f64>,
    snapshot_tolerance: Option<f64>,
    stall_multiple: Option<f64>,
    #[serde(default)]
    diff_only: Vec<String>,
    #[serde(default)]
    budgets: Budgets,
    #[serde(default, deserialize_with = "in_file_order")]
    profiles: Vec<(String, String)>,
    /// Dialect descriptions, loaded before the configuration is read ([`dialects_in`]).
    #[serde(default)]
    #[allow(dead_code)]
    dialects: Vec<String>,
}

/// The dialect descriptions the configuration names (`dialects = [...]`, placed relative to
/// its folder), read before anything else so that their rules exist when the rest of the
/// configuration (its `allow` list) and the captures are read. The configuration is the one
/// `--config FILE` in `args` names, else the working directory's.
pub fn dialects_in(args: &[std::ffi::OsString]) -> Result<Vec<PathBuf>, String> {
    let explicit = args.iter().enumerate().find_map(|(i, a)| {
        let a = a.to_str()?;
        match a.strip_prefix("--config=") {
            Some(v) => Some(PathBuf::from(v)),
            None if a == "--config" => args.get(i + 1).map(PathBuf::from),
            None => None,
        }
    });
    let path = match explicit {
        Some(p) => p,
        None if Path::new(CONFIG_FILE).is_file() => PathBuf::from(CONFIG_FILE),
        None => return Ok(Vec::new()),
    };
    let shown = path.display();
    let mut text = String::new();
    std::fs::File::open(&path)
        .and_then(|f| f.take(MAX_CONFIG + 1).read_to_string(&mut text))
        .map_err(|e| format!("{shown}: {e}"))?;
    let value: toml::Table = match toml::from_str(&text) {
        Ok(v) => v,
        // The configuration's own reading reports what is wrong with it.
        Err(_) => return Ok(Vec::new()),
    };
    let Some(list) = value.get("dialects") else {
        return Ok(Vec::new());
    };
    let dir = path.parent().unwrap_or(Path::new(""));
    list.as_array()
        .ok_or_else(|| format!("{shown}: dialects must be a list of description files"))?
        .iter()
        .map(|v| {
            v.as_str()
                .map(|p| dir.join(p))
                .ok_or_else(|| format!("{shown}: dialects must be a list of description files"))
        })
        .collect()
}

/// A table's entries in the order the file gives them (the first matching pattern wins).
fn in_file_order<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<(String, String)>, D::Error> {
    struct Entries;
    impl<'de> serde::de::Visitor<'de> for Entries {
        type Value = Vec<(String, String)>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a table of file-name patterns and profiles")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut entries = Vec::new();
            while let Some(entry) = map.next_entry()? {
                entries.push(entry);
            }
            Ok(entries)
        }
    }
    deserializer.deserialize_map(Entries)
}

/// What the configuration file says, checked. Empty when there is no file.
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// The file that was read.
    pub path: Option<PathBuf>,
    pub fail_on: Option<Severity>,
    pub allow: Vec<Rule>,
    /// A bundled profile's name, or a profile file (already made relative to the config's folder).
    pub profile: Option<PathBuf>,
    pub snapshot_hz: Option<f64>,
    /// Percent.
    pub snapshot_tolerance: Option<f64>,
    /// Periods of a stream a gap must exceed to be a stall (`session.snapshot-stall`).
    pub stall_multiple: Option<f64>,
    /// `diff`: the figure name prefixes compared and judged (none: all compared, the headline
    /// judged), as `--only` gives them.
    pub diff_only: Vec<String>,
    pub budgets: Budgets,
    /// The `[profiles]` table: capture file-name patterns and their profiles (placed as
    /// `profile` is), in file order.
    pub profiles: Vec<(String, PathBuf)>,
}

/// The key serde's "unknown field `x`, expected one of `a`, `b`" names nearest to `x`, as
/// "; did you mean a?" (empty for another message).
fn unknown_key_hint(message: &str) -> String {
    let Some((_, rest)) = message.split_once("unknown field `") else {
        return String::new();
    };
    let Some((typed, expected)) = rest.split_once('`') else {
        return String::new();
    };
    let expected = expected.lines().next().unwrap_or_default();
    let keys = expected.split('`').skip(1).step_by(2);
    crate::proto::near::hint(typed, keys)
}

impl Config {
    /// The profile the `[profiles]` table gives a capture, by its file name: the first pattern
    /// that matches, with the pattern.
    pub fn profile_for(&self, capture: &Path) -> Option<(&str, &Path)> {
        let name = capture.file_name()?.to_str()?;
        self.profiles
            .iter()
            .find(|(pattern, _)| glob_matches(pattern, name))
            .map(|(pattern, profile)| (pattern.as_str(), profile.as_path()))
    }

    /// The configuration in `explicit` (`--config FILE`, which must exist), else in
    /// [`CONFIG_FILE`] in the working directory when there is one, else none.
    pub fn find(explicit: Option<&Path>) -> Result<Config, String> {
        match explicit {
            Some(path) => Config::load(path),
            None => {
                let path = Path::new(CONFIG_FILE);
                if path.is_file() {
                    Config::load(path)
                } else {
                    Ok(Config::default())
                }
            }
        }
    }

    /// Reads and checks one configuration file.
    pub fn load(path: &Path) -> Result<Config, String> {
        let shown = path.display();
        let mut text = String::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_CONFIG + 1).read_to_string(&mut text))
            .map_err(|e| format!("{shown}: {e}"))?;
        if text.len() as u64 > MAX_CONFIG {
            return Err(format!(
                "{shown}: config file larger than {MAX_CONFIG} bytes"
            ));
        }
        Config::parse(&text, path).map_err(|e| format!("{shown}: {e}"))
    }

    /// Parses configuration text; `path` places relative profile paths.
    fn parse(text: &str, path: &Path) -> Result<Config, String> {
        let file: ConfigFile = toml::from_str(text).map_err(|e| {
            // toml's message is several lines (the line, a caret); keep it whole but indented.
            let message = e.to_string();
            format!(
                "invalid config: {}{}",
                message.trim_end().replace('\n', "\n  "),
                unknown_key_hint(&message)
            )
        })?;
        let fail_on = file
            .fail_on
            .map(|s| {
                Severity::parse(&s).ok_or_else(|| {
                    format!("fail_on must be \"error\", \"warning\" or \"info\", not {s:?}")
                })
            })
            .transpose()?;
        let mut allow = Vec::new();
        let mut unknown = Vec::new();
        for id in &file.allow {
            match Rule::from_id(id) {
                Some(rule) => allow.push(rule),
                None => unknown.push(id.as_str()),
            }
        }
        if !unknown.is_empty() {
            return Err(unknown_rules("allow", &unknown));
        }
        if let Some(hz) = file.snapshot_hz {
            check_snapshot_hz(hz, "snapshot_hz")?;
        }
        if let Some(pct) = file.snapshot_tolerance {
            check_snapshot_tolerance(pct, "snapshot_tolerance")?;
        }
        if let Some(m) = file
            .stall_multiple
            .filter(|m| !(m.is_finite() && *m >= 1.0))
        {
            return Err(format!(
                "stall_multiple must be a number of 1 or more, not {m}"
            ));
        }
        file.budgets.check()?;
        let place = |p: String| {
            let bundled = crate::proto::profile::Profile::bundled(&p).is_some();
            let dir = path.parent().unwrap_or(Path::new(""));
            if bundled {
                PathBuf::from(p)
            } else {
                dir.join(p)
            }
        };
        let profile = file.profile.map(place);
        let profiles = file
            .profiles
            .into_iter()
            .map(|(pattern, profile)| (pattern, place(profile)))
            .collect();
        Ok(Config {
            path: Some(path.to_path_buf()),
            fail_on,
            allow,
            profile,
            snapshot_hz: file.snapshot_hz,
            snapshot_tolerance: file.snapshot_tolerance,
            stall_multiple: file.stall_multiple,
            diff_only: file.diff_only,
            budgets: file.budgets,
            profiles,
        })
    }
}

/// Whether `name` matches `pattern`, where `*` stands for any run of characters and `?` for any
/// one; every other character for itself. Only the last `*` is ever retried: at most the
/// pattern's length times the name's steps, whatever the pattern.
fn glob_matches(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    let (mut i, mut j) = (0, 0);
    // Where the last `*` was, and the name's position it has taken up to.
    let mut star: Option<(usize, usize)> = None;
    while j < n.len() {
        match p.get(i) {
            Some('*') => {
                star = Some((i, j));
                i += 1;
            }
            Some(&c) if c == '?' || c == n[j] => {
                i += 1;
                j += 1;
            }
            _ => match star {
                Some((si, sj)) => {
                    star = Some((si, sj + 1));
                    i = si + 1;
                    j = sj + 1;
                }
                None => return false,
            },
        }
    }
    p[i..].iter().all(|c| *c == '*')
}

/// "unknown rule ID(s) in KEY: …", each with the nearest known IDs, for the file's `allow`, the
/// command line's `--allow` and `--violation`.
pub fn unknown_rules(key: &str, ids: &[&str]) -> String {
    let named: Vec<String> = ids
        .iter()
        .map(|id| {
            let known = Rule::all().iter().map(|r| r.id());
            match crate::proto::near::nearest(id, known, 3).as_slice() {
                [] => (*id).to_string(),
                near => format!("{id} (did you mean {}?)", near.join(", ")),
            }
        })
        .collect();
    format!(
        "unknown rule ID{} in {key}: {} (`rtype-inspect violations` lists them)",
        if ids.len() == 1 { "" } else { "s" },
        named.join(", ")
    )
}

/// A nominal snapshot rate must be a positive number of Hz; `key` names where it was given.
pub fn check_snapshot_hz(hz: f64, key: &str) -> Result<(), String> {
    if hz.is_finite() && hz > 0.0 {
        Ok(())
    } else {
        Err(format!("{key} must be a positive number of Hz, not {hz}"))
    }
}

/// A tolerance is a percentage from 0 to 100; `key` names where it was given.
pub fn check_snapshot_tolerance(pct: f64, key: &str) -> Result<(), String> {
    if pct.is_finite() && (0.0..=100.0).contains(&pct) {
        Ok(())
    } else {
        Err(format!(
            "{key} must be a percentage from 0 to 100, not {pct}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, String> {
        Config::parse(text, Path::new("dir/rtype-inspect.toml"))
    }

    #[test]
    fn reads_every_key() {
        let c = parse(
            "fail_on = \"warning\"\nallow = [\"rtype.pong.empty\"]\nprofile = \"p.toml\"\n\
             snapshot_hz = 30\nsnapshot_tolerance = 10\nstall_multiple = 4.5\n\
             diff_only = [\"field.\"]\n",
        )
        .unwrap();
        assert_eq!(c.diff_only, ["field."]);
        assert_eq!(c.stall_multiple, Some(4.5));
        assert_eq!(c.fail_on, Some(Severity::Warning));
        assert_eq!(c.allow, vec![Rule::from_id("rtype.pong.empty").unwrap()]);
        assert_eq!(c.profile, Some(PathBuf::from("dir/p.toml")));
        assert_eq!(
            (c.snapshot_hz, c.snapshot_tolerance),
            (Some(30.0), Some(10.0))
        );
    }

    #[test]
    fn reads_budgets() {
        let c = parse(
            "[budgets]\nsnapshot_kbps_per_client = 256\ndatagram_bytes_max = 1200\n\
             entity_updates_per_s_min = 20\nsnapshot_hz_min = 55\nrtt_p95_ms_max = 50\n\
             loss_percent_max = 1\nsnapshot_gap_ms_max = 100\n",
        )
        .unwrap();
        let b = c.budgets;
        assert_eq!(
            b.entries().map(|(_, v)| v),
            [256.0, 1200.0, 20.0, 55.0, 50.0, 1.0, 100.0].map(Some)
        );
        assert!(!b.is_empty() && parse("").unwrap().budgets.is_empty());
        let e = parse("[budgets]\nsnapshot_kbps = 5\n").unwrap_err();
        assert!(e.contains("snapshot_kbps") && e.contains("line 2"), "{e}");
        // A key mistyped: the nearest named, in the budgets and at the top.
        let e = parse("[budgets]\nrtt_p95_ms_mx = 5\n").unwrap_err();
        assert!(
            e.ends_with("`snapshot_gap_ms_max`; did you mean rtt_p95_ms_max?"),
            "{e}"
        );
        let e = parse("alow = []\n").unwrap_err();
        assert!(e.ends_with("; did you mean allow?"), "{e}");
        let e = parse("[budgets]\nloss_percent_max = 120\n").unwrap_err();
        assert!(
            e.starts_with("budgets.loss_percent_max must be a percentage from 0 to 100"),
            "{e}"
        );
        let e = parse("[budgets]\nrtt_p95_ms_max = -1\n").unwrap_err();
        assert!(
            e.starts_with("budgets.rtt_p95_ms_max must be a positive number"),
            "{e}"
        );
    }

    #[test]
    fn globs_match_file_names() {
        let cases = [
            ("*-15byte*.pcap", "reference-15byte-levelevents.pcap", true),
            ("*-15byte*.pcap", "reference-17byte-1client.pcap", false),
            ("*.pcap", "a.pcapng", false),
            ("*.pcap*", "a.pcapng", true),
            ("a?c", "abc", true),
            ("a?c", "ac", false),
            ("*", "", true),
            ("", "", true),
            ("", "x", false),
            ("a*b*c", "aXbYbZc", true),
            ("a*b*c", "aXbYbZ", false),
            ("*.é", "ü.é", true),
        ];
        for (pattern, name, expected) in cases {
            assert_eq!(glob_matches(pattern, name), expected, "{pattern} {name}");
        }
    }

    #[test]
    fn profiles_by_file_name_first_match_wins() {
        let c = parse(
            "[profiles]\n\"*-17byte*\" = \"reference-17byte\"\n\"z*\" = \"p.toml\"\n\
             \"*\" = \"reference-15byte\"\n",
        )
        .unwrap();
        let profile = |name: &str| c.profile_for(Path::new(name)).map(|(_, p)| p.to_owned());
        assert_eq!(
            profile("dir/a-17byte.pcap"),
            Some(PathBuf::from("reference-17byte"))
        );
        assert_eq!(
            profile("zz-17byte"),
            Some(PathBuf::from("reference-17byte"))
        );
        assert_eq!(profile("zz.pcap"), Some(PathBuf::from("dir/p.toml")));
        assert_eq!(
            profile("other.pcap"),
            Some(PathBuf::from("reference-15byte"))
        );
        assert_eq!(parse("").unwrap().profile_for(Path::new("x")), None);
        let e = parse("[profiles]\n\"*\" = 5\n").unwrap_err();
        assert!(e.contains("line 2"), "{e}");
    }

    #[test]
    fn bundled_profiles_are_named_not_placed() {
        let c = parse("profile = \"reference-17byte\"").unwrap();
        assert_eq!(c.profile, Some(PathBuf::from("reference-17byte")));
    }

    #[test]
    fn errors_name_the_key() {
        let cases = [
            (
                "snapshot_hz = -5",
                "snapshot_hz must be a positive number of Hz, not -5",
            ),
            (
                "snapshot_tolerance = 120",
                "snapshot_tolerance must be a percentage from 0 to 100, not 120",
            ),
            (
                "fail_on = \"loud\"",
                "fail_on must be \"error\", \"warning\" or \"info\", not \"loud\"",
            ),
            ("allow = [\"nope\"]", "unknown rule ID in allow: nope"),
            (
                "stall_multiple = 0.5",
                "stall_multiple must be a number of 1 or more, not 0.5",
            ),
        ];
        for (text, expected) in cases {
            let e = parse(text).unwrap_err();
            assert!(e.starts_with(expected), "{text}: {e}");
        }
        let e = parse("snapshot_herz = 5").unwrap_err();
        assert!(e.contains("line 1") && e.contains("snapshot_herz"), "{e}");
    }
}
