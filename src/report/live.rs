//! `live`: capture on a Linux interface and decode datagrams as they arrive, with the packet list
//! of `packets` (same format, same filters) or, with `--format json`, the NDJSON timeline of
//! `export`; the summary of `rtype-inspect FILE` when the capture stops (Ctrl-C, `--duration`,
//! `--count`). `-w FILE` also writes every captured frame to a pcap file that reads back with the
//! same results (to a temporary file beside it, flushed every second so a full disk stops the
//! capture at once, and renamed into place when the capture ends). `interfaces` lists what can be
//! captured on.
//!
//! The capture loop allocates nothing per packet: one receive buffer (the capture layer's), one
//! output buffer handed to the writing thread whenever the kernel's queue is empty, and the
//! pipeline's own reused buffers.
//!
//! stdout is written on a thread of its own ([`Writer`]), so that a stdout that blocks (a pipe
//! nobody reads yet, a paused terminal) does not stop the capture: packets go on being read while
//! up to [`MAX_BACKLOG`] bytes of output wait; past that the loop stops reading them, and the
//! kernel's drop counter says how many were lost. `--duration` ends the capture on time whatever
//! stdout does: the packets queued in the socket when it ends are read if they arrived in time
//! (and counted as lost if the output could not take them).

use std::cell::RefCell;
use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::export::Export;
use super::filter::FilterOptions;
use super::packets::{Packets, PacketsOptions};
use super::table;
use crate::app::{write_stdout, Format, OutputFile, ReadOpts, Term};
use crate::capture::live::{self, Interface, LiveCapture};
use crate::capture::writer::PcapWriter;
use crate::capture::{CaptureInfo, ReadEnd};
use crate::pipeline::{Pipeline, RunEnd, Sink};
use crate::session::event::{DatagramEvent, LooseFinding, ReassembledEvent};
use crate::session::Conversations;
use crate::tally::summary::Summary;

/// `rtype-inspect live`'s options, as `cli::args` parsed them.
pub struct LiveOptions {
    pub interface: String,
    pub write: Option<PathBuf>,
    pub count: Option<u64>,
    pub duration: Option<Duration>,
    pub format: Format,
    pub verbose: bool,
    pub hex: bool,
    pub filter: FilterOptions,
    pub read: ReadOpts,
}

pub(crate) fn seconds(text: &str) -> Result<Duration, String> {
    match text.parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 && s < 1e9 => Ok(Duration::from_secs_f64(s)),
        _ => Err(format!("`{text}` is not a positive number of seconds")),
    }
}

/// Set by SIGINT and SIGTERM: the capture stops and the summary is printed.
pub(crate) static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// Catches SIGINT and SIGTERM without SA_RESTART, so a waiting poll returns at once.
pub(crate) fn catch_signals() {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction is valid; the handler only stores to an atomic, which is
        // async-signal-safe.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as *const () as libc::sighandler_t;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// A second Ctrl-C while the summary is being written ends the program as usual.
pub(crate) fn default_signals() {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: restoring the default disposition.
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
        }
    }
}

/// The report's output, kept in memory until the loop drains it to stdout (a writer the sink can
/// own while the loop still reaches the bytes).
#[derive(Clone, Default)]
struct Pending(Rc<RefCell<Vec<u8>>>);

impl Write for Pending {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The report's sink, plus the summary and the counts the status line shows.
struct Tee<S: Sink> {
    inner: S,
    summary: Summary,
    datagrams: u64,
    violations: u64,
    /// The conversations whose snapshots no layout read ([`RunEnd::unfit`]).
    unfit: usize,
}

impl<S: Sink> Sink for Tee<S> {
    type Fields = S::Fields;
    fn fields(&mut self) -> &mut S::Fields {
        self.inner.fields()
    }
    fn start(&mut self, info: &CaptureInfo) {
        self.inner.start(info);
        self.summary.start(info);
    }
    fn begin(&mut self, conversations: &Conversations, conversation: u32) {
        self.inner.begin(conversations, conversation);
    }
    fn datagram(&mut self, e: &DatagramEvent<'_>) {
        self.datagrams += 1;
        self.violations += e.findings.len() as u64;
        self.inner.datagram(e);
        self.summary.datagram(e);
    }
    fn skipped(&mut self, e: &DatagramEvent<'_>) {
        self.inner.skipped(e);
    }
    fn reassembled(&mut self, e: &ReassembledEvent<'_>) {
        self.inner.reassembled(e);
        self.summary.reassembled(e);
    }
    fn loose(&mut self, f: &LooseFinding) {
        self.violations += 1;
        self.inner.loose(f);
        self.summary.loose(f);
    }
    fn cut(&mut self, f: &LooseFinding, reason: &str) {
        self.violations += 1;
        self.inner.cut(f, reason);
        self.summary.loose(f);
    }
    fn end(&mut self, end: &RunEnd<'_>) {
        self.inner.end(end);
        self.summary.end(end);
        self.unfit = end.unfit();
    }
}

/// The one-line status on stderr, redrawn every second when stderr is a terminal.
struct Status {
    on: bool,
    /// stdout shares the terminal: clear the status line before printing packets.
    shared: bool,
    shown: bool,
    text: String,
}

impl Status {
    fn clear(&mut self) {
        if self.shown {
            eprint!("\r\x1b[K");
            self.shown = false;
        }
    }
    fn show(&mut self) {
        if self.on && !self.text.is_empty() {
            eprint!("\r\x1b[K{}", self.text);
            self.shown = true;
        }
    }
}

/// The status line, shared with the writing thread, which clears it around what it prints.
type SharedStatus = Arc<Mutex<Status>>;

fn lock_status(shared: &SharedStatus) -> std::sync::MutexGuard<'_, Status> {
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

/// Why the capture stopped.
enum Stop {
    Running,
    Done,
    /// stdout was closed (`| head`): stop quietly.
    OutputClosed,
}

/// Output waiting for stdout past which the capture stops reading packets (the kernel then drops
/// them, and counts them).
const MAX_BACKLOG: usize = 64 << 20;

/// Writes to stdout on a thread of its own (see the module doc): buffers go over a channel, the
/// bytes not yet written are counted, and the first write error is kept.
struct Writer {
    tx: Option<mpsc::Sender<Vec<u8>>>,
    /// Emptied buffers coming back, for reuse.
    spare: mpsc::Receiver<Vec<u8>>,
    backlog: Arc<AtomicUsize>,
    error: Arc<Mutex<Option<io::Error>>>,
    thread: Option<JoinHandle<()>>,
}

impl Writer {
    fn start(status: SharedStatus) -> Writer {
        let (tx, rx) = mpsc::channel::<Vec<u8>>();
        let (back, spare) = mpsc::channel();
        let backlog = Arc::new(AtomicUsize::new(0));
        let error = Arc::new(Mutex::new(None));
        let (queued, failed) = (backlog.clone(), error.clone());
        let thread = std::thread::spawn(move || {
            for mut buf in rx.iter() {
                let write = |buf: &[u8]| {
                    let mut out = io::stdout().lock();
                    out.write_all(buf).and_then(|_| out.flush())
                };
                // The status line is held only while stdout shares its terminal: a blocked pipe
                // must not hold the capture loop, which redraws the status every second.
                let shared = lock_status(&status).shared;
                let result = if shared {
                    let mut status = lock_status(&status);
                    status.clear();
                    let result = write(&buf);
                    status.show();
                    result
                } else {
                    write(&buf)
                };
                queued.fetch_sub(buf.len(), Ordering::Relaxed);
                if let Err(e) = result {
                    *failed.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
                    // Nothing more can be written: what still comes is only counted off.
                    for buf in rx.iter() {
                        queued.fetch_sub(buf.len(), Ordering::Relaxed);
                    }
                    return;
                }
                buf.clear();
                let _ = back.send(buf);
            }
        });
        Writer {
            tx: Some(tx),
            spare,
            backlog,
            error,
            thread: Some(thread),
        }
    }

    /// Bytes handed over and not written yet.
    fn backlog(&self) -> usize {
        self.backlog.load(Ordering::Relaxed)
    }

    /// Hands the pending output over, without waiting for it to be written.
    fn send(&mut self, pending: &Pending) {
        let mut buf = pending.0.borrow_mut();
        if buf.is_empty() {
            return;
        }
        let next = self.spare.try_recv().unwrap_or_default();
        let full = std::mem::replace(&mut *buf, next);
        self.backlog.fetch_add(full.len(), Ordering::Relaxed);
        if let Some(tx) = &self.tx {
            if let Err(mpsc::SendError(full)) = tx.send(full) {
                self.backlog.fetch_sub(full.len(), Ordering::Relaxed);
            }
        }
    }

    /// Why the capture must stop when writing failed: stdout was closed (`| head`), or
    /// another error (kept for the end).
    fn failed(&self) -> Option<Stop> {
        let error = self.error.lock().unwrap_or_else(|e| e.into_inner());
        error.as_ref().map(|e| match e.kind() {
            io::ErrorKind::BrokenPipe => Stop::OutputClosed,
            _ => Stop::Done,
        })
    }

    /// Waits until everything handed over is written; the write error, if any.
    fn finish(mut self) -> Option<io::Error> {
        drop(self.tx.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let mut error = self.error.lock().unwrap_or_else(|e| e.into_inner());
        error.take()
    }
}

fn kernel_drops(stats: Option<live::KernelStats>) -> String {
    stats.map_or_else(|| "n/a".to_string(), |s| s.dropped.to_string())
}

/// Runs `rtype-inspect live`.
pub fn run(options: LiveOptions, term: Term) -> Result<ExitCode, String> {
    if options.read.threads.is_some() {
        return Err(
            "live decodes frames one at a time as they arrive: --threads is for files".into(),
        );
    }
    let reading = options.read.reading()?;
    let filter = options.filter.build()?;
    if options.format == Format::Json && (options.verbose || options.hex) {
        return Err("-V and -x are for the text packet list, not --format json".into());
    }
    let mut capture = LiveCapture::open(&options.interface).map_err(|e| e.to_string())?;
    let info = live::capture_info(capture.link_type());
    if options
        .write
        .as_deref()
        .is_some_and(crate::app::output::is_stdout)
    {
        return Err("-w - would write the capture where the packet list goes: give a file".into());
    }
    let mut pcap = match &options.write {
        Some(path) => {
            let w = PcapWriter::new(
                OutputFile::create(path, &[])?,
                capture.link_type(),
                live::PRECISION,
                live::SNAPLEN,
            );
            Some((
                path.clone(),
                w.map_err(|e| format!("{}: {e}", path.display()))?,
            ))
        }
        None => None,
    };
    let pipeline = reading.pipeline();
    let pending = Pending::default();
    let stderr_tty = io::stderr().is_terminal();
    let stdout_tty = io::stdout().is_terminal();
    let status: SharedStatus = Arc::new(Mutex::new(Status {
        on: stderr_tty && !options.read.quiet,
        shared: stderr_tty && stdout_tty,
        shown: false,
        text: String::new(),
    }));
    let mut writer = Writer::start(status.clone());
    catch_signals();
    let mut until = String::from("Ctrl-C");
    if let Some(n) = options.count {
        until += &format!(", {n} datagrams");
    }
    if let Some(d) = options.duration {
        until += &format!(", {} s", d.as_secs_f64());
    }
    eprintln!(
        "listening on {} ({}), capturing until {until}",
        options.interface,
        capture.link_type().name()
    );
    let limits = Limits {
        count: options.count,
        duration: options.duration,
    };
    let mut live = Live {
        capture: &mut capture,
        pcap: pcap.as_mut().map(|(_, w)| w),
        pending: &pending,
        writer: &mut writer,
        status: &status,
        limits,
        unread: 0,
    };
    let (stop, summary, write_error, unfit) = match options.format {
        Format::Text => {
            let options = PacketsOptions {
                verbose: options.verbose,
                hex: options.hex,
                width: term.width,
                time: Default::default(),
                color: term.color,
            };
            let mut tee = Tee {
                inner: Packets::new(pending.clone(), options, filter),
                summary: Summary::default(),
                datagrams: 0,
                violations: 0,
                unfit: 0,
            };
            let (stop, write_error) = live.run(pipeline, &info, &mut tee)?;
            (stop, Some(tee.summary), write_error, tee.unfit)
        }
        Format::Json => {
            let mut tee = Tee {
                inner: Export::new(pending.clone(), false, filter),
                summary: Summary::default(),
                datagrams: 0,
                violations: 0,
                unfit: 0,
            };
            let (stop, write_error) = live.run(pipeline, &info, &mut tee)?;
            (stop, None, write_error, tee.unfit)
        }
    };
    let unread = live.unread;
    // The counters as the capture ends: the socket stays open while stdout catches up, and what
    // the kernel drops meanwhile was never part of the capture.
    let (frames, kernel) = (capture.frames() - unread, capture.stats());
    drop(capture);
    default_signals();
    lock_status(&status).clear();
    if let (Format::Text, Some(summary), Stop::Done) = (options.format, &summary, &stop) {
        let text = format!(
            "\n{}",
            summary.text(&format!("{} (live)", options.interface), term)
        );
        pending.0.borrow_mut().extend_from_slice(text.as_bytes());
    }
    writer.send(&pending);
    // Everything is written before the last line: stdout may still be blocked, and is waited for.
    let output = writer.finish();
    let finished = pcap.map(|(path, w)| {
        let done = w
            .finish()
            .map_err(|e| format!("{}: {e}", path.display()))
            .and_then(OutputFile::commit);
        (path, done)
    });
    let mut last = format!(
        "{}: {frames} frames captured, {} dropped by the kernel",
        options.interface,
        kernel_drops(kernel)
    );
    if unread > 0 {
        last +=
            &format!(", {unread} arrived in time but not decoded (the output could not keep up)");
    }
    if let Some((path, _)) = &finished {
        last += &format!(", written to {}", path.display());
    }
    if let Some(note) = crate::pipeline::unfit_note(unfit) {
        eprintln!("{}: {note}", options.interface);
    }
    eprintln!("{last}");
    if let Some(e) = write_error {
        return Err(e);
    }
    if let Some((_, Err(e))) = finished {
        return Err(e);
    }
    match (stop, output) {
        (Stop::OutputClosed, _) => Ok(ExitCode::SUCCESS),
        (_, Some(e)) if e.kind() != io::ErrorKind::BrokenPipe => {
            Err(format!("writing output: {e}"))
        }
        _ => Ok(ExitCode::SUCCESS),
    }
}

struct Limits {
    count: Option<u64>,
    duration: Option<Duration>,
}

/// The capture loop's state.
struct Live<'a> {
    capture: &'a mut LiveCapture,
    pcap: Option<&'a mut PcapWriter<OutputFile>>,
    pending: &'a Pending,
    writer: &'a mut Writer,
    status: &'a SharedStatus,
    limits: Limits,
    /// Frames that arrived before the deadline but were read only to be discarded, the output
    /// being too far behind when the capture ended.
    unread: u64,
}

/// The report output waiting past this many bytes is handed to the writer even while packets
/// keep coming.
const DRAIN_AT: usize = 1 << 16;

/// One captured frame: to the `-w` file and through the pipeline.
fn take<S: Sink>(
    pcap: Option<&mut PcapWriter<OutputFile>>,
    pending: &Pending,
    writer: &mut Writer,
    frame: &crate::capture::Frame<'_>,
    pipeline: &mut Pipeline,
    sink: &mut Tee<S>,
) -> Result<(), String> {
    if let Some(w) = pcap {
        w.write_frame(frame)
            .map_err(|e| format!("writing the capture file: {e}"))?;
    }
    pipeline.frame(frame, sink);
    if pending.0.borrow().len() >= DRAIN_AT {
        writer.send(pending);
    }
    Ok(())
}

/// Now, in nanoseconds since the Unix epoch: the clock the kernel stamps packets with.
fn wall_nanos() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

impl Live<'_> {
    /// Captures until a limit, a signal or a closed stdout; then finishes the pipeline (the
    /// summary). Returns why it stopped and the error that stopped it early (writing the `-w`
    /// file, or reading the socket), if any.
    fn run<S: Sink>(
        &mut self,
        mut pipeline: Pipeline,
        info: &CaptureInfo,
        sink: &mut Tee<S>,
    ) -> Result<(Stop, Option<String>), String> {
        sink.start(info);
        let started = Instant::now();
        let deadline = self.limits.duration.map(|d| started + d);
        // The same deadline on the kernel's clock, to tell the packets still queued when it comes
        // that arrived in time.
        let deadline_nanos = self
            .limits
            .duration
            .map(|d| wall_nanos().saturating_add(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)));
        let mut next_tick = started + Duration::from_secs(1);
        let mut frames = 0u64;
        let mut write_error = None;
        let mut stop = Stop::Running;
        self.writer.send(self.pending);
        while matches!(stop, Stop::Running) {
            if let Some(failed) = self.writer.failed() {
                stop = failed;
                break;
            }
            if STOP.load(Ordering::Relaxed)
                || self.limits.count.is_some_and(|n| sink.datagrams >= n)
            {
                stop = Stop::Done;
                break;
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                stop = Stop::Done;
                // What arrived in time and waits in the socket's queue is part of the capture.
                if let Some(last) = deadline_nanos {
                    match self.queued_until(last, &mut pipeline, sink, &mut frames) {
                        Ok(()) => {}
                        Err(e) => write_error = Some(e),
                    }
                }
                break;
            }
            if now >= next_tick {
                if let Err(e) = self.tick(sink) {
                    write_error = Some(e);
                    stop = Stop::Done;
                    break;
                }
                while next_tick <= now {
                    next_tick += Duration::from_secs(1);
                }
            }
            let mut wait = next_tick
                .saturating_duration_since(now)
                .min(Duration::from_millis(250));
            if let Some(d) = deadline {
                wait = wait.min(d.saturating_duration_since(now));
            }
            // stdout is far behind: leave the packets to the kernel (which counts those it drops)
            // until it catches up, keeping the deadline.
            if self.writer.backlog() >= MAX_BACKLOG {
                std::thread::sleep(wait.min(Duration::from_millis(10)));
                continue;
            }
            match self.capture.next_frame() {
                Ok(Some(frame)) => {
                    let (pcap, pending) = (self.pcap.as_deref_mut(), self.pending);
                    let taken = take(pcap, pending, self.writer, &frame, &mut pipeline, sink);
                    frames += 1;
                    if let Err(e) = taken {
                        write_error = Some(e);
                        stop = Stop::Done;
                        break;
                    }
                }
                Ok(None) => {
                    // The queue is empty: show what came, then wait for more (or the next tick).
                    self.writer.send(self.pending);
                    self.capture.wait(wait).map_err(|e| {
                        format!("live capture on {}: poll: {e}", self.capture.interface())
                    })?;
                }
                Err(e) => {
                    // The interface went away or down: what came so far is still reported.
                    write_error = Some(format!(
                        "live capture on {}: recvmsg: {}",
                        self.capture.interface(),
                        e
                    ));
                    stop = Stop::Done;
                    break;
                }
            }
        }
        pipeline.finish(info, &ReadEnd::complete(frames), sink);
        Ok((stop, write_error))
    }

    /// At the deadline: the frames still queued that the kernel stamped up to `last` (it stamps
    /// them as they arrive), as long as the output can take them; past it they are counted as
    /// not decoded. Stops at the first later frame, at `--count`, or when the queue is empty.
    fn queued_until<S: Sink>(
        &mut self,
        last: i64,
        pipeline: &mut Pipeline,
        sink: &mut Tee<S>,
        frames: &mut u64,
    ) -> Result<(), String> {
        loop {
            if self.limits.count.is_some_and(|n| sink.datagrams >= n) {
                return Ok(());
            }
            let behind = self.writer.backlog() >= MAX_BACKLOG;
            match self.capture.next_frame() {
                Ok(Some(frame)) if frame.ts_nanos <= last => {
                    if behind {
                        self.unread += 1;
                    } else {
                        let (pcap, pending) = (self.pcap.as_deref_mut(), self.pending);
                        *frames += 1;
                        take(pcap, pending, self.writer, &frame, pipeline, sink)?;
                    }
                }
                // A packet after the capture's end: not captured.
                Ok(Some(_)) => return Ok(()),
                Ok(None) | Err(_) => return Ok(()),
            }
        }
    }

    /// Every second: the status line, and the `-w` file flushed, so that a write error (a full
    /// disk) stops the capture within a second rather than at its end.
    fn tick<S: Sink>(&mut self, sink: &Tee<S>) -> Result<(), String> {
        if let Some(w) = self.pcap.as_deref_mut() {
            w.flush()
                .map_err(|e| format!("writing the capture file: {e}"))?;
        }
        // A terminal that does not take output (paused) holds the status: skip this redraw.
        let Ok(mut status) = self.status.try_lock() else {
            return Ok(());
        };
        if status.on {
            let drops = kernel_drops(self.capture.stats());
            status.text = format!(
                "{}: {} frames, {} datagrams, {} violations, {drops} kernel drops",
                self.capture.interface(),
                self.capture.frames(),
                sink.datagrams,
                sink.violations
            );
            status.show();
        }
        Ok(())
    }
}

/// Runs `rtype-inspect interfaces`.
pub fn interfaces(format: Format, term: Term) -> Result<ExitCode, String> {
    let list = live::interfaces().map_err(|e| format!("listing interfaces: {e}"))?;
    match format {
        Format::Json => write_stdout(
            (serde_json::to_string_pretty(&list).unwrap_or_default() + "\n").as_bytes(),
        ),
        Format::Text => write_stdout(interfaces_text(&list, term).as_bytes()),
    }
}

fn interfaces_text(list: &[Interface], term: Term) -> String {
    let mut t = table::new(term, &["#", "Interface", "Flags", "Link", "Addresses"]);
    for i in list {
        let flags: Vec<&str> = [
            (i.up, "up"),
            (i.running, "running"),
            (i.loopback, "loopback"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect();
        let flags = if flags.is_empty() {
            "down".to_string()
        } else {
            flags.join(", ")
        };
        t.add_row(vec![
            i.index.to_string(),
            i.name.clone(),
            flags,
            i.link_type.unwrap_or("?").to_string(),
            i.addresses.join("\n"),
        ]);
    }
    format!("{t}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(seconds("1.5"), Ok(Duration::from_millis(1500)));
        for bad in ["0", "-1", "nan", "inf", "x", ""] {
            assert!(seconds(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn interface_table() {
        let list = vec![
            Interface {
                name: "lo".into(),
                index: 1,
                up: true,
                running: true,
                loopback: true,
                link_type: Some("ethernet"),
                addresses: vec!["127.0.0.1/8".into(), "::1/128".into()],
            },
            Interface {
                name: "eth9".into(),
                index: 2,
                up: false,
                running: false,
                loopback: false,
                link_type: None,
                addresses: vec![],
            },
        ];
        let text = interfaces_text(&list, Term::pipe());
        assert!(text.contains("up, running, loopback"), "{text}");
        assert!(
            text.contains("127.0.0.1/8") && text.contains("::1/128"),
            "{text}"
        );
        assert!(text.contains("down"), "{text}");
    }

    #[test]
    fn pending_output_is_shared() {
        let p = Pending::default();
        let mut w = p.clone();
        w.write_all(b"abc").unwrap();
        assert_eq!(&*p.0.borrow(), b"abc");
    }
}
