//! Arbitrary bytes as a capture file (pcap, pcapng, gzip or anything else) through the whole
//! pipeline, once per report sink: the summary (and its text), the NDJSON export, the verbose
//! packet list with hex dumps, the session statistics and the profile (and its text). Nothing may panic, hang or grow
//! memory past the documented limits (run with -rss_limit_mb=512 -timeout=10).
#![no_main]

use std::io::{self, Cursor};
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use rtype_inspect::app::{Format, ReadOpts, Term};
use rtype_inspect::capture::CaptureReader;
use rtype_inspect::pipeline::{Pipeline, Sink};
use rtype_inspect::proto::profile::Profile;
use rtype_inspect::report::export::Export;
use rtype_inspect::report::filter::FilterOptions;
use rtype_inspect::report::packets::{Packets, PacketsOptions};
use rtype_inspect::report::profile::{self, Profiler};
use rtype_inspect::report::stats::Stats;
use rtype_inspect::report::summary::Summary;

fn run<S: Sink>(data: &[u8], sink: &mut S) -> bool {
    let Ok(mut reader) =
        CaptureReader::from_read(Path::new("fuzz"), Box::new(Cursor::new(data.to_vec())))
    else {
        return false;
    };
    Pipeline::new(Profile::document(), None)
        .with_threads(2)
        .run(&mut reader, sink)
        .is_ok()
}

fuzz_target!(|data: &[u8]| {
    let mut summary = Summary::default();
    if !run(data, &mut summary) {
        return;
    }
    let _ = summary.text("fuzz", Term::pipe());
    let filter = FilterOptions::default().build().expect("the empty filter");
    let mut export = Export::new(io::sink(), false, filter.clone());
    run(data, &mut export);
    let options = PacketsOptions {
        verbose: true,
        hex: true,
        width: Some(100),
        time: Default::default(),
        color: true,
    };
    let mut packets = Packets::new(io::sink(), options, filter);
    run(data, &mut packets);
    for format in [Format::Text, Format::Json] {
        run(data, &mut Stats::new(io::sink(), format, "fuzz", Term::pipe()));
    }
    let reading = ReadOpts {
        quiet: true,
        ..ReadOpts::default()
    }
    .reading()
    .expect("default reading options");
    let mut profiler = Profiler::new("fuzz", &reading, 100_000_000);
    run(data, &mut profiler);
    if let Some(json) = profiler.json() {
        let _ = profile::text(json, Term::pipe());
    }
});
