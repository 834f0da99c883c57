//! A display filter allocates nothing per datagram: with a filter that reads the header, message
//! fields, the reassembled snapshot, addresses and violations, a capture twice as long costs the
//! summary no more allocations than it costs without the filter.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

use rtype_inspect::app::{read_capture, ReadOpts};
use rtype_inspect::report::summary::Summary;
use rtype_inspect::samplegen::generate_large;

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, SeqCst);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, SeqCst);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Allocations of one summary of `capture`, with `filter`, on `threads` threads.
fn allocations(capture: &Path, filter: Option<&str>, threads: u16) -> usize {
    let reading = ReadOpts {
        quiet: true,
        filter: filter.map(str::to_string),
        threads: Some(threads),
        ..ReadOpts::default()
    }
    .reading()
    .unwrap();
    let mut summary = Summary::default();
    let before = ALLOCATIONS.load(SeqCst);
    read_capture(capture, &reading, &mut summary).unwrap();
    ALLOCATIONS.load(SeqCst) - before
}

#[test]
fn a_filter_allocates_nothing_per_datagram() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("display_filter_alloc");
    std::fs::create_dir_all(&dir).unwrap();
    let captures: Vec<PathBuf> = [20_000u64, 40_000]
        .iter()
        .map(|n| {
            let path = dir.join(format!("large-{n}.pcap"));
            let file = std::fs::File::create(&path).unwrap();
            generate_large(std::io::BufWriter::new(file), *n, 4).unwrap();
            path
        })
        .collect();
    let filter = "(rtype.msg_type == 0x14 && rtype.snapshot.entity.id > 3 && rtype.snapshot.entity.pos_x >= 0) \
                  || rtype.reassembled.entity_count > 1 || ip.src == 10.0.0.0/8 \
                  || rtype.violation contains \"chunk\" || udp.port in {1..1000}";
    // On one thread, where the count is the same from run to run (with workers, how many batches
    // are made depends on how the threads meet).
    let plain: Vec<usize> = captures.iter().map(|c| allocations(c, None, 1)).collect();
    let filtered: Vec<usize> = captures
        .iter()
        .map(|c| allocations(c, Some(filter), 1))
        .collect();
    let growth = |v: &[usize]| v[1] as i64 - v[0] as i64;
    // 20 000 more datagrams: the filter may add a few allocations (buffers reaching a larger
    // high-water mark), never one per datagram.
    assert!(
        growth(&filtered) - growth(&plain) < 100,
        "allocations without the filter {plain:?}, with it {filtered:?}"
    );
    // The filter did read the messages: the run with it matched some datagrams and not all.
    assert!(filtered[0] > plain[0], "{plain:?} {filtered:?}");
    // On workers too, nothing is allocated per datagram: the batches are recycled, and at most
    // a few per worker are ever made.
    for threads in [2, 5] {
        let runs: Vec<usize> = captures
            .iter()
            .map(|c| allocations(c, Some(filter), threads))
            .collect();
        assert!(
            growth(&runs).abs() < 200,
            "{threads} threads: allocations {runs:?}"
        );
    }
}
