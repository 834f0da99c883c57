//! The tsharks the Lua dissectors' tests run in: Debian 12's 4.0 on the host, 4.4 and 4.6 in the
//! chroots `.ci/debian-chroot` builds, and how to run one over a capture with a Lua script.
//! Shared by the test files that include it (`#[path = "support/tshark.rs"] mod tshark;`, with
//! `#[path = "support/skip.rs"] mod skip;` beside it).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use super::skip;

/// A tshark to run the dissector in: Debian 12's 4.0 (Lua 5.2) on the host, Debian 13's 4.4
/// (Lua 5.4) and Debian unstable's 4.6 in the chroots `.ci/debian-chroot` builds under
/// /var/cache (or `RTYPE_TRIXIE_ROOT`, `RTYPE_SID_ROOT`). tshark 4.4 and later load no Lua
/// plugin at all as root, so they run as `nobody` there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tshark {
    Host,
    Trixie,
    Sid,
}

/// A chroot holding a newer tshark: its Debian suite (as `.ci/debian-chroot` names it), the
/// variable that moves it, the version its tshark must be, and the variable that makes it
/// required (set by .ci/run once it built the chroot).
pub struct Chroot {
    suite: &'static str,
    root_var: &'static str,
    version: &'static str,
    require_var: &'static str,
}

pub const TRIXIE: Chroot = Chroot {
    suite: "trixie",
    root_var: "RTYPE_TRIXIE_ROOT",
    version: "4.4",
    require_var: "RTYPE_REQUIRE_TSHARK_4_4",
};
pub const SID: Chroot = Chroot {
    suite: "sid",
    root_var: "RTYPE_SID_ROOT",
    version: "4.6",
    require_var: "RTYPE_REQUIRE_TSHARK_4_6",
};

impl Tshark {
    pub fn name(self) -> &'static str {
        match self {
            Tshark::Host => "tshark 4.0",
            Tshark::Trixie => "tshark 4.4",
            Tshark::Sid => "tshark 4.6",
        }
    }

    /// The chroot this tshark runs in (none: the host's).
    pub fn chroot(self) -> Option<&'static Chroot> {
        match self {
            Tshark::Host => None,
            Tshark::Trixie => Some(&TRIXIE),
            Tshark::Sid => Some(&SID),
        }
    }
}

impl Chroot {
    pub fn root(&self) -> PathBuf {
        std::env::var_os(self.root_var).map_or_else(
            || PathBuf::from(format!("/var/cache/rtype-inspect/{}", self.suite)),
            PathBuf::from,
        )
    }

    /// Why the chroot's tshark cannot run, if it cannot.
    pub fn missing(&self) -> Option<String> {
        let root = self.root();
        if !root.join(".rtype-inspect-packages").exists() || !root.join("usr/bin/tshark").exists() {
            return Some(format!(
                "no Debian {} chroot with tshark at {}",
                self.suite,
                root.display()
            ));
        }
        let out = Command::new("chroot")
            .arg("--userspec=65534:65534")
            .arg(&root)
            .args([
                "/usr/bin/env",
                "-i",
                "PATH=/usr/bin:/bin",
                "tshark",
                "--version",
            ])
            .output();
        let want = format!("TShark (Wireshark) {}.", self.version);
        match out {
            Ok(o) if String::from_utf8_lossy(&o.stdout).starts_with(&want) => None,
            Ok(o) => Some(format!(
                "{want} does not run in {} ({}{})",
                root.display(),
                String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .next()
                    .unwrap_or(""),
                String::from_utf8_lossy(&o.stderr).trim()
            )),
            Err(e) => Some(format!("chroot: {e}")),
        }
    }

    /// The chroot's directory for this test process's files (made once; older ones removed), and
    /// its path inside the chroot.
    pub fn dir(&self) -> (PathBuf, String) {
        let tmp = self.root().join("tmp");
        let name = format!("rtype-inspect-tests-{}", std::process::id());
        let dir = tmp.join(&name);
        if !dir.exists() {
            if let Ok(entries) = std::fs::read_dir(&tmp) {
                for entry in entries.flatten() {
                    let old = entry
                        .file_name()
                        .to_string_lossy()
                        .starts_with("rtype-inspect-tests-")
                        && entry.metadata().and_then(|m| m.modified()).is_ok_and(|t| {
                            t.elapsed().unwrap_or_default() > std::time::Duration::from_secs(3600)
                        });
                    if old {
                        let _ = std::fs::remove_dir_all(entry.path());
                    }
                }
            }
            std::fs::create_dir_all(&dir).unwrap();
            make_readable(&dir, 0o755);
        }
        (dir, format!("/tmp/{name}"))
    }

    /// `path` as the chroot sees it, copied in.
    pub fn copy_in(&self, path: &Path) -> String {
        static COUNT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let (dir, inside) = self.dir();
        let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("{n}-{}", path.file_name().unwrap().to_string_lossy());
        std::fs::copy(path, dir.join(&name)).unwrap();
        make_readable(&dir.join(&name), 0o644);
        format!("{inside}/{name}")
    }
}

/// The tsharks `test` runs in: 4.0 when `tshark` is on PATH (CI installs Debian's package), 4.4
/// and 4.6 when their chroots are there. A missing one is said on stderr; it fails the test in
/// CI (tests/support/skip.rs), and a missing chroot also when its `RTYPE_REQUIRE_TSHARK_4_*` is
/// set (by .ci/run once it built the chroot).
pub fn tsharks(test: &str) -> Vec<Tshark> {
    static HOST: OnceLock<bool> = OnceLock::new();
    static MISSING: [OnceLock<Option<String>>; 2] = [OnceLock::new(), OnceLock::new()];
    let mut list = Vec::new();
    if *HOST.get_or_init(|| {
        Command::new("tshark")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    }) {
        list.push(Tshark::Host);
    } else {
        skip::missing(
            &format!("the tshark 4.0 half of {test}"),
            "tshark is not on PATH (apt-get install tshark)",
        );
    }
    for (ts, missing) in [Tshark::Trixie, Tshark::Sid].into_iter().zip(&MISSING) {
        let chroot = ts.chroot().unwrap();
        match missing.get_or_init(|| chroot.missing()) {
            None => list.push(ts),
            Some(why) if std::env::var_os(chroot.require_var).is_some() => {
                panic!(
                    "{test}: {} is required ({}) but {why}",
                    ts.name(),
                    chroot.require_var
                )
            }
            Some(why) => skip::missing(
                &format!("the {} half of {test}", ts.name()),
                &format!("{why} (bash .ci/debian-chroot {} builds it)", chroot.suite),
            ),
        }
    }
    list
}

pub fn make_readable(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// `ts` reading `capture` with the Lua `script` (`-n -r CAPTURE -X lua_script:SCRIPT`), both
/// copied into the chroot when `ts` runs in one; the caller adds the rest of the arguments.
pub fn command(ts: Tshark, capture: &Path, script: &Path) -> Command {
    match ts {
        Tshark::Host => {
            let mut cmd = Command::new("tshark");
            cmd.arg("-n")
                .arg("-r")
                .arg(capture)
                .arg("-X")
                .arg(format!("lua_script:{}", script.display()));
            cmd
        }
        Tshark::Trixie | Tshark::Sid => {
            let chroot = ts.chroot().unwrap();
            let mut cmd = Command::new("chroot");
            cmd.arg("--userspec=65534:65534")
                .arg(chroot.root())
                .args(["/usr/bin/env", "-i", "PATH=/usr/bin:/bin", "LANG=C.UTF-8"])
                .arg(format!("HOME={}", chroot.dir().1))
                .args(["tshark", "-n", "-r"])
                .arg(chroot.copy_in(capture))
                .arg("-X")
                .arg(format!("lua_script:{}", chroot.copy_in(script)));
            cmd
        }
    }
}
