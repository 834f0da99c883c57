//! The progress bar: drawn on stderr while a read is long, only when stderr is a terminal (here
//! a pseudo-terminal from util-linux's `script`), and cleared when the read ends. The capture
//! comes through a named pipe that pauses halfway, so the read is long however fast the machine;
//! a pipe has no size, so what shows is the spinner with the bytes read so far.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_rtype-inspect");

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("rtype-progress-{}-{name}", std::process::id()))
}

/// Makes a named pipe at `fifo` and writes `bytes` into it from a thread, pausing `pause` halfway.
fn feed_slowly(fifo: &Path, bytes: Vec<u8>, pause: Duration) -> std::thread::JoinHandle<()> {
    let _ = std::fs::remove_file(fifo);
    let made = Command::new("mkfifo")
        .arg(fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let fifo = fifo.to_owned();
    std::thread::spawn(move || {
        let mut pipe = std::fs::OpenOptions::new()
            .write(true)
            .open(&fifo)
            .expect("the reader opens the pipe");
        let (first, rest) = bytes.split_at(bytes.len() / 2);
        pipe.write_all(first).expect("first half written");
        std::thread::sleep(pause);
        pipe.write_all(rest).expect("second half written");
    })
}

#[test]
fn a_long_read_shows_progress_on_a_terminal_only() {
    let capture = temp("capture.pcap");
    let made = Command::new(BIN)
        .args(["generate", "--large", "20000", "--output"])
        .arg(&capture)
        .output()
        .expect("generate runs");
    assert!(made.status.success(), "{made:?}");
    let bytes = std::fs::read(&capture).expect("capture written");
    let expected = Command::new(BIN)
        .arg("export")
        .arg(&capture)
        .args(["-o", "-"])
        .output()
        .expect("export runs");
    assert!(expected.status.success());

    // On a terminal: the spinner draws while the pipe pauses, then is erased.
    let fifo = temp("fifo");
    let (typescript, exported) = (temp("typescript"), temp("export.ndjson"));
    let writer = feed_slowly(&fifo, bytes.clone(), Duration::from_millis(1200));
    let command = format!("{BIN} export {} -o {}", fifo.display(), exported.display());
    let run = Command::new("script")
        .args(["-q", "-e", "-c", &command])
        .arg(&typescript)
        .stdin(Stdio::null())
        .output()
        .expect("util-linux `script` runs (Debian package bsdutils)");
    writer.join().expect("writer finishes");
    assert!(run.status.success(), "{run:?}");
    let drawn =
        String::from_utf8_lossy(&std::fs::read(&typescript).expect("typescript")).into_owned();
    let frames: Vec<&str> = drawn
        .split("\r\x1b[2K")
        .filter(|frame| frame.contains(" read, "))
        .collect();
    assert!(
        frames.len() >= 3,
        "expected the spinner to tick during the pause: {drawn:?}"
    );
    // Halfway through the 5 MB capture, counted in bytes.
    assert!(
        frames.iter().any(|f| f.contains(" MiB read, ")),
        "{frames:?}"
    );
    let last_clear = drawn.rfind("\r\x1b[2K").expect("the bar is cleared");
    assert!(
        !drawn[last_clear..].contains(" read, "),
        "nothing is drawn after the bar is cleared: {drawn:?}"
    );
    // The output is the same as without a terminal.
    assert_eq!(
        std::fs::read(&exported).expect("export written"),
        expected.stdout
    );

    // Not on a terminal: nothing on stderr, however long the read.
    let writer = feed_slowly(&fifo, bytes, Duration::from_millis(600));
    let quiet = Command::new(BIN)
        .arg("export")
        .arg(&fifo)
        .args(["-o", "-"])
        .stderr(Stdio::piped())
        .output()
        .expect("export runs");
    writer.join().expect("writer finishes");
    assert!(quiet.status.success());
    assert_eq!(String::from_utf8_lossy(&quiet.stderr), "");
    assert_eq!(quiet.stdout, expected.stdout);

    for path in [capture, fifo, typescript, exported] {
        let _ = std::fs::remove_file(path);
    }
}
