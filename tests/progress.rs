//! The progress bar: drawn on stderr while a read is long, only when stderr is a terminal (here
//! a pseudo-terminal from util-linux's `script`), and cleared when the read ends. The capture
//! comes through a named pipe that pauses halfway, so the read is long however fast the machine;
//! a pipe has no size, so what shows is the spinner with the bytes read so far. `generate --large`
//! writes into a named pipe whose reader pauses halfway: its bar counts the datagrams made.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_rtype-inspect");

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("rtype-progress-{}-{name}", std::process::id()))
}

/// Makes a named pipe at `fifo` (replacing what is there).
fn mkfifo(fifo: &Path) -> PathBuf {
    let _ = std::fs::remove_file(fifo);
    let made = Command::new("mkfifo")
        .arg(fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    fifo.to_owned()
}

/// The capture of `generate --large 20000` (no terminal: nothing on stderr), at `temp(name)`.
fn generated(name: &str) -> (PathBuf, Vec<u8>) {
    let capture = temp(name);
    let made = Command::new(BIN)
        .args(["generate", "--large", "20000", "--output"])
        .arg(&capture)
        .output()
        .expect("generate runs");
    assert!(made.status.success(), "{made:?}");
    assert_eq!(
        String::from_utf8_lossy(&made.stderr),
        "",
        "nothing on a pipe"
    );
    let bytes = std::fs::read(&capture).expect("capture written");
    (capture, bytes)
}

/// Runs `command` on a pseudo-terminal (`script`), recording what it draws in `typescript`; the
/// drawing, cut into the frames the bar redraws (after each erase) that contain `shown`.
fn on_terminal(command: &str, typescript: &Path, shown: &str) -> (String, Vec<String>) {
    let run = Command::new("script")
        .args(["-q", "-e", "-c", command])
        .arg(typescript)
        .stdin(Stdio::null())
        .output()
        .expect("util-linux `script` runs (Debian package bsdutils)");
    assert!(run.status.success(), "{run:?}");
    let drawn =
        String::from_utf8_lossy(&std::fs::read(typescript).expect("typescript")).into_owned();
    let frames = drawn
        .split("\r\x1b[2K")
        .filter(|frame| frame.contains(shown))
        .map(str::to_owned)
        .collect();
    let last_clear = drawn.rfind("\r\x1b[2K").expect("the bar is cleared");
    assert!(
        !drawn[last_clear..].contains(shown),
        "nothing is drawn after the bar is cleared: {drawn:?}"
    );
    (drawn, frames)
}

/// Makes a named pipe at `fifo` and writes `bytes` into it from a thread, pausing `pause` halfway.
fn feed_slowly(fifo: &Path, bytes: Vec<u8>, pause: Duration) -> std::thread::JoinHandle<()> {
    let fifo = mkfifo(fifo);
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

/// Makes a named pipe at `fifo` and reads it to the end from a thread, pausing `pause` after
/// `first` bytes; the thread returns what it read.
fn drain_slowly(fifo: &Path, first: usize, pause: Duration) -> std::thread::JoinHandle<Vec<u8>> {
    let fifo = mkfifo(fifo);
    std::thread::spawn(move || {
        let mut pipe = std::fs::File::open(&fifo).expect("the writer opens the pipe");
        let mut bytes = vec![0; first];
        pipe.read_exact(&mut bytes).expect("first part read");
        std::thread::sleep(pause);
        pipe.read_to_end(&mut bytes).expect("rest read");
        bytes
    })
}

#[test]
fn generating_a_large_capture_shows_progress_on_a_terminal_only() {
    let (capture, expected) = generated("generated.pcap");

    // On a terminal: the bar draws while the reader pauses, then is erased.
    let (fifo, typescript) = (temp("generate-fifo"), temp("generate-typescript"));
    let reader = drain_slowly(&fifo, expected.len() / 2, Duration::from_millis(1200));
    let command = format!("{BIN} generate --large 20000 --output {}", fifo.display());
    let (drawn, frames) = on_terminal(&command, &typescript, "/20,000 datagrams, ");
    let written = reader.join().expect("reader finishes");
    // The bar ticks during the pause, standing at one count short of the end.
    let counts: Vec<&str> = frames
        .iter()
        .filter_map(|f| f.rsplit(['█', '░']).next()?.split('/').next())
        .map(str::trim)
        .collect();
    let paused = counts.iter().filter(|c| **c != "20,000").fold(
        std::collections::HashMap::<&str, usize>::new(),
        |mut seen, c| {
            *seen.entry(*c).or_default() += 1;
            seen
        },
    );
    assert!(
        paused.values().any(|n| *n >= 3),
        "expected the bar to tick during the pause: {counts:?} in {drawn:?}"
    );
    // The same capture as without a terminal.
    assert!(written == expected, "the capture differs on a terminal");

    for path in [capture, fifo, typescript] {
        let _ = std::fs::remove_file(path);
    }
}

#[test]
fn a_long_read_shows_progress_on_a_terminal_only() {
    let (capture, bytes) = generated("capture.pcap");
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
    let (drawn, frames) = on_terminal(&command, &typescript, " read, ");
    writer.join().expect("writer finishes");
    assert!(
        frames.len() >= 3,
        "expected the spinner to tick during the pause: {drawn:?}"
    );
    // Halfway through the 5 MB capture, counted in bytes.
    assert!(
        frames.iter().any(|f| f.contains(" MiB read, ")),
        "{frames:?}"
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
