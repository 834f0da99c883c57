//! What a test does when a tool it needs (tshark, lua5.4, DuckDB, PySpark, Java, Chromium, root)
//! is missing: on a developer's machine it skips, saying so; in CI (`CI` set, as CI services
//! set it, to anything but `false` or `0`) it fails, so that a machine missing a tool cannot pass
//! the suite by skipping. Shared by the test files that include it
//! (`#[path = "support/skip.rs"] mod skip;`).

#![allow(dead_code)]

/// Whether the tests run in CI, where every tool must be there.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// Says that `test` cannot run because `why` (the tool missing, and how to install it): fails
/// the test in CI, prints it otherwise. The caller then returns early.
pub fn missing(test: &str, why: &str) {
    if in_ci() {
        panic!("{test}: {why} (CI=true: a missing tool fails the test instead of skipping it)");
    }
    eprintln!("skipping {test}: {why}");
}
