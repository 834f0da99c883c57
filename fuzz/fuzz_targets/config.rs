//! Arbitrary text as the `check` config file (`rtype-inspect.toml`): read, merged with the
//! command line and judged against a small sample capture exactly as `rtype-inspect check
//! --config FILE --format json` does. A config is accepted or refused with a message, never a
//! panic; its values (rates, tolerances, rule IDs, a profile path relative to it) reach the
//! analysis and the reports. Run with `-close_fd_mask=1`: the JSON report goes to stdout.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use clap::Parser;
use libfuzzer_sys::fuzz_target;
use rtype_inspect::cli::args::CheckArgs;
use rtype_inspect::report::check;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    check: CheckArgs,
}

/// A directory of this process's own for the config file (and anything it names nearby).
fn dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d =
            std::env::temp_dir().join(format!("rtype-inspect-fuzz-config-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("a scratch directory");
        d
    })
}

fuzz_target!(|data: &[u8]| {
    let config = dir().join("rtype-inspect.toml");
    std::fs::write(&config, data).expect("the config file is written");
    let sample = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../samples/clean-session.pcap.gz"
    );
    let args = [
        "check",
        "--quiet",
        "--format",
        "json",
        "--config",
        config.to_str().unwrap(),
        sample,
    ];
    let cli = Cli::try_parse_from(args).expect("the arguments parse");
    let _ = check::run(cli.check.into(), rtype_inspect::app::Term::pipe());
});
