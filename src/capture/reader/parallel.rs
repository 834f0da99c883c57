//! [`CaptureReader::for_each_frame_parallel`]: a capture read and worked by several threads in
//! batches, and delivered in file order.

use std::ops::{ControlFlow, Range};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use super::{CaptureError, CaptureReader, Deliver, Frame, ReadEnd};
use crate::capture::window::Window;

/// [`CaptureReader::for_each_frame_parallel`] hands frames over in batches whose frames and
/// results take about [`BatchSize`] bytes in all: this many bytes of batches, divided by the
/// threads...
const BATCH_BYTES_IN_ALL: usize = 2 * 1024 * 1024;
/// ... but no less than this (many threads)...
const MIN_BATCH_BYTES: usize = 256 * 1024;
/// ... nor more than this (few threads).
pub const MAX_BATCH_BYTES: usize = 1024 * 1024;
/// The weight of a batch's results before any batch has been worked.
const UNKNOWN_WEIGHT: usize = usize::MAX;

impl CaptureReader {
    /// [`CaptureReader::for_each_frame`] spread over threads, one per worker (the calling thread
    /// takes the last): each thread in turn reads (and gunzips) a batch of frames into a buffer of
    /// up to 1 MiB, which the batch takes, uncopied, and does its [`Ahead`] work on it; the
    /// calling thread hands the batches to `on_frame` in file order, frame by frame with its
    /// batch's results and its index in the batch, and reads and works a batch itself only when
    /// the next one is not worked yet ([`Pool`]). So no thread waits while there is work, and the
    /// threads hardly ever sleep: on 2 cores, 250 thread switches for 2 M datagrams, where a
    /// reading thread and three workers handing batches over took 10,000 (and 0.57 s for the
    /// summary against 0.47 s). Batches are recycled and at most 2 per thread + 1 are in flight,
    /// so memory stays bounded whatever the file; a batch's results count toward its size, as far
    /// as the last batches worked show how much a frame's results weigh, and a worker leaves the
    /// rest of a batch whose results outgrow the batch's size to `on_frame`. When `on_frame`
    /// breaks, reading and working stop too. Returns how reading ended and the CPU time each
    /// stage used ([`StageCpu`]).
    pub fn for_each_frame_parallel<A: Ahead>(
        &mut self,
        mut workers: Vec<A>,
        mut on_frame: impl FnMut(&Frame<'_>, &A::Results, usize) -> ControlFlow<()>,
    ) -> Result<(ReadEnd, StageCpu), CaptureError> {
        let size = BatchSize::for_threads(workers.len().max(1));
        // The calling thread's own worker; the others get a thread each.
        let mut own = workers.pop();
        let pool = Pool::new(self, size, 2 * (workers.len() + 1) + 1);
        // Frames `on_frame` saw, and whether it stopped the reading.
        let (mut delivered, mut stopped) = (0u64, false);
        let workers_cpu = AtomicU64::new(0);
        // The calling thread's reading and working, and all its CPU time.
        let (mut own_cpu, mut own_all) = (Sections::default(), 0);
        std::thread::scope(|scope| {
            for mut worker in workers {
                let (pool, workers_cpu) = (&pool, &workers_cpu);
                scope.spawn(move || {
                    // A worker that panicked would leave the calling thread waiting for its batch.
                    let _stop = StopIfPanicking(pool);
                    let mut cpu = Sections::default();
                    while let Some((seq, batch)) = pool.read(&mut cpu) {
                        pool.work(seq, batch, &mut worker, &mut cpu);
                    }
                    let all = thread_cpu_nanos();
                    workers_cpu.fetch_add(all.saturating_sub(cpu.reading), Ordering::Relaxed);
                    pool.reading_cpu.fetch_add(cpu.reading, Ordering::Relaxed);
                });
            }
            // A panic here (the calling thread's worker, or `on_frame`) would leave the workers
            // waiting for a place in flight, and the scope waiting for them.
            let _stop = StopIfPanicking(&pool);
            let before = thread_cpu_nanos();
            let mut next = 0;
            loop {
                match pool.next(next) {
                    Next::Deliver(mut batch) => {
                        if batch.deliver(&mut on_frame, &mut delivered).is_break() {
                            stopped = true;
                            break;
                        }
                        batch.clear(size);
                        A::clear(&mut batch.results, size.bytes);
                        pool.recycle(batch);
                        next += 1;
                    }
                    Next::Read(spare) => {
                        if let Some((seq, batch)) = pool.read_reserved(spare, &mut own_cpu) {
                            match own.as_mut() {
                                Some(worker) => pool.work(seq, batch, worker, &mut own_cpu),
                                None => pool.worked(seq, batch),
                            }
                        }
                    }
                    Next::End => break,
                }
            }
            // The workers stop at their next batch.
            pool.stop();
            own_all = thread_cpu_nanos().saturating_sub(before);
        });
        let reading_cpu = pool.reading_cpu.into_inner();
        let mut end = self.read_end();
        if stopped {
            // Reading ran ahead of the frame that stopped it: the end is that frame's, as when
            // one thread reads (what lies past it, a cut or a skipped block, was never asked for).
            end.frames = delivered;
            end.truncated = None;
            end.skipped.retain(|s| s.frame <= delivered);
        }
        let cpu = StageCpu {
            reading: reading_cpu + own_cpu.reading,
            workers: workers_cpu.into_inner() + own_cpu.working,
            ordered: own_all.saturating_sub(own_cpu.reading + own_cpu.working),
            frames: end.frames,
        };
        Ok((end, cpu))
    }
}

/// Work [`CaptureReader::for_each_frame_parallel`] does on a worker thread for every frame:
/// what needs nothing from the frames before it (link layers, checksums, decompression...).
pub trait Ahead: Send {
    /// What it leaves for one batch's frames; reused from batch to batch.
    type Results: Default + Send;
    /// Adds one frame's results (every frame must add exactly one, in order). Without `room`
    /// the batch's results are full: the frame gets results that leave its work to the
    /// consumer.
    fn frame(&mut self, frame: &Frame<'_>, results: &mut Self::Results, room: bool);
    /// Bytes the results hold, counted toward the batch's size.
    fn size(results: &Self::Results) -> usize;
    /// Empties the results for reuse, giving back memory a hostile batch made them take beyond
    /// twice the batch's `limit`.
    fn clear(results: &mut Self::Results, limit: usize);
}

/// Nothing ahead: the threads only read.
impl Ahead for () {
    type Results = ();
    fn frame(&mut self, _: &Frame<'_>, _: &mut (), _: bool) {}
    fn size(_: &()) -> usize {
        0
    }
    fn clear(_: &mut (), _: usize) {}
}

/// How big a parallel read's batches are: the bytes a batch's frames and results take together
/// (its results alone may grow to as much; the worker leaves the rest of its frames to the
/// consumer, as for a hostile batch whose every datagram decompresses to 64 KiB), and the
/// frames it holds at most. A few threads get large batches, so that fewer are handed over
/// (when a reading thread handed them to workers, 1 MiB batches took a quarter of the thread
/// switches of 256 KiB ones and 4 to 6 % off the summary's wall time; with the pool, 512 KiB
/// ones take as long); many threads get smaller ones, so that the batches in flight take about
/// as much memory in all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct BatchSize {
    bytes: usize,
}

impl BatchSize {
    pub(super) fn for_threads(threads: usize) -> BatchSize {
        BatchSize {
            bytes: (BATCH_BYTES_IN_ALL / threads.max(1)).clamp(MIN_BATCH_BYTES, MAX_BATCH_BYTES),
        }
    }

    /// Frames a batch holds at most: 4,096 in a batch of 256 KiB.
    pub(super) fn frames(self) -> usize {
        self.bytes / 64
    }

    /// How many bytes a batch reads when its results weigh `weight` sixteenths of its frames'
    /// bytes. Until a batch has been worked the weight is unknown and batches are kept small:
    /// the reading runs several batches ahead, and a batch whose results overflow leaves the
    /// rest of its work to the ordered stage.
    pub(super) fn reading(self, weight: usize) -> usize {
        if weight == UNKNOWN_WEIGHT {
            FIRST_BATCH_BYTES
        } else {
            self.bytes * 16 / (16 + weight)
        }
    }
}

/// The bytes of the batches read before any has been worked.
pub(super) const FIRST_BATCH_BYTES: usize = MIN_BATCH_BYTES / 16;

/// CPU time (nanoseconds) each stage of [`CaptureReader::for_each_frame_parallel`] used: reading
/// and working (each on all threads together), and the ordered stage. How the work would scale
/// with more cores follows from the ordered stage's share: it runs on one thread whatever their
/// number.
#[derive(Clone, Copy, Debug, Default)]
pub struct StageCpu {
    pub reading: u64,
    pub workers: u64,
    pub ordered: u64,
    /// The frames the run read.
    pub frames: u64,
}

impl StageCpu {
    /// The CPU time of every stage together.
    pub fn total(&self) -> u64 {
        self.reading + self.workers + self.ordered
    }

    /// The longest part one thread does alone: the ordered stage, or reading (one thread at a
    /// time, under the reader's lock).
    fn serial(&self) -> u64 {
        self.ordered.max(self.reading)
    }

    /// The frames per second this run's work would take on `cores` cores as fast as this
    /// machine's: its CPU time shared among them, but no faster than its [`StageCpu::serial`]
    /// part.
    pub fn predicted_rate(&self, cores: u32) -> f64 {
        let wall = (self.total() as f64 / f64::from(cores.max(1))).max(self.serial() as f64);
        if wall > 0.0 {
            self.frames as f64 * 1e9 / wall
        } else {
            0.0
        }
    }

    /// The fewest cores from which the serial part, not the cores, bounds the run.
    pub fn bound_from(&self) -> u32 {
        let serial = self.serial().max(1);
        self.total().div_ceil(serial).clamp(1, u64::from(u32::MAX)) as u32
    }
}

/// CPU time the calling thread has used, in nanoseconds (0 where the clock is unavailable).
pub fn thread_cpu_nanos() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given, nothing else.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } == 0;
    if ok {
        (t.tv_sec as u64).saturating_mul(1_000_000_000) + t.tv_nsec as u64
    } else {
        0
    }
}

/// Frames that cross to another thread in the buffer they were read into: the buffer, each
/// frame's [`Frame`] but its bytes and where those lie in the buffer, and what [`Ahead`] found.
#[derive(Default)]
struct Batch<R> {
    data: Vec<u8>,
    frames: Vec<(Frame<'static>, Range<usize>)>,
    results: R,
}

impl<R> Batch<R> {
    /// The frames, as `on_frame` and the workers see them.
    fn each(&self) -> impl Iterator<Item = Frame<'_>> {
        self.frames.iter().map(|(frame, at)| Frame {
            data: self.data.get(at.clone()).unwrap_or_default(),
            ..*frame
        })
    }

    /// Hands the frames to `on_frame`, counting them in `delivered`.
    fn deliver(
        &self,
        on_frame: &mut impl FnMut(&Frame<'_>, &R, usize) -> ControlFlow<()>,
        delivered: &mut u64,
    ) -> ControlFlow<()> {
        for (index, frame) in self.each().enumerate() {
            *delivered += 1;
            on_frame(&frame, &self.results, index)?;
        }
        ControlFlow::Continue(())
    }

    /// Empties the batch for reuse (its buffer will be the window's); one that grew for a huge
    /// record gives the memory back.
    fn clear(&mut self, size: BatchSize) {
        self.frames.clear();
        if self.data.capacity() > 2 * size.bytes {
            self.data = Vec::new();
        }
    }
}

/// The batches of [`CaptureReader::for_each_frame_parallel`] between its threads. Every thread
/// reads batches (one thread at a time) and works them; the calling thread also delivers them
/// in order, and reads and works one itself only when the batch next in order is not worked
/// yet. So no thread waits while there is work: a thread sleeps only when the batches in flight
/// reach their bound (the ordered stage is behind), or at the end.
struct Pool<'r, R> {
    reading: Mutex<Reading<'r, R>>,
    flight: Mutex<Flight<R>>,
    /// A batch was delivered: one more may be read.
    slot_free: Condvar,
    /// The batch the calling thread waits for was worked, or reading ended.
    next_ready: Condvar,
    /// Batches read (or being read) and not yet delivered, at most: bounds the memory.
    limit: usize,
    size: BatchSize,
    /// Results bytes per 16 bytes of frames in the last batch worked: how full a batch is.
    weight: AtomicUsize,
    /// CPU nanoseconds the worker threads spent reading.
    reading_cpu: AtomicU64,
}

/// The reading side of a [`Pool`], which one thread at a time holds.
struct Reading<'r, R> {
    reader: &'r mut CaptureReader,
    /// The frames read since the last batch was handed over.
    batch: Batch<R>,
    /// A delivered batch, whose buffer the window takes next.
    spare: Option<Batch<R>>,
    /// The batch handed over by the last read.
    ready: Option<Batch<R>>,
    /// Batches handed over so far: the next one's number.
    sent: u64,
    started: bool,
    finished: bool,
}

/// The batches in flight of a [`Pool`].
struct Flight<R> {
    /// Batches worked, with their numbers, waiting for their turn.
    worked: Vec<(u64, Batch<R>)>,
    /// Delivered batches, for their buffers.
    free: Vec<Batch<R>>,
    in_flight: usize,
    /// How many batches were read in all, once reading has ended.
    total: Option<u64>,
    stopped: bool,
    /// The batch the calling thread sleeps until.
    awaited: Option<u64>,
}

/// What the calling thread does next.
enum Next<R> {
    Deliver(Batch<R>),
    /// Read a batch (a place in flight is taken for it), into this batch's buffer if any.
    Read(Option<Batch<R>>),
    End,
}

/// CPU nanoseconds a thread spent reading and working batches.
#[derive(Default)]
struct Sections {
    reading: u64,
    working: u64,
}

impl<'r, R: Default + Send> Pool<'r, R> {
    fn new(reader: &'r mut CaptureReader, size: BatchSize, limit: usize) -> Self {
        Pool {
            reading: Mutex::new(Reading {
                reader,
                batch: Batch::default(),
                spare: None,
                ready: None,
                sent: 0,
                started: false,
                finished: false,
            }),
            flight: Mutex::new(Flight {
                worked: Vec::new(),
                free: Vec::new(),
                in_flight: 0,
                total: None,
                stopped: false,
                awaited: None,
            }),
            slot_free: Condvar::new(),
            next_ready: Condvar::new(),
            limit,
            size,
            weight: AtomicUsize::new(UNKNOWN_WEIGHT),
            reading_cpu: AtomicU64::new(0),
        }
    }

    fn flight(&self) -> MutexGuard<'_, Flight<R>> {
        self.flight.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A worker thread's next batch, once one may be read; `None` when reading ended or stopped.
    fn read(&self, cpu: &mut Sections) -> Option<(u64, Batch<R>)> {
        let spare = {
            let mut f = self.flight();
            loop {
                if f.stopped || f.total.is_some() {
                    return None;
                }
                if f.in_flight < self.limit {
                    break;
                }
                f = self
                    .slot_free
                    .wait(f)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            f.in_flight += 1;
            f.free.pop()
        };
        self.read_reserved(spare, cpu)
    }

    /// Reads the next batch, its place in flight taken.
    fn read_reserved(
        &self,
        spare: Option<Batch<R>>,
        cpu: &mut Sections,
    ) -> Option<(u64, Batch<R>)> {
        let before = thread_cpu_nanos();
        let mut reading = self.reading.lock().unwrap_or_else(PoisonError::into_inner);
        let got = reading.next(spare, self.size, self.weight.load(Ordering::Relaxed));
        let sent = reading.sent;
        drop(reading);
        cpu.reading += thread_cpu_nanos().saturating_sub(before);
        if got.is_none() {
            let mut f = self.flight();
            f.in_flight -= 1;
            f.total = Some(sent);
            drop(f);
            self.slot_free.notify_all();
            self.next_ready.notify_all();
        }
        got.map(|batch| (sent - 1, batch))
    }

    /// Works batch `seq` and puts it in line.
    fn work<A: Ahead<Results = R>>(
        &self,
        seq: u64,
        mut batch: Batch<R>,
        worker: &mut A,
        cpu: &mut Sections,
    ) {
        let before = thread_cpu_nanos();
        self.weight
            .store(batch.work(worker, self.size), Ordering::Relaxed);
        cpu.working += thread_cpu_nanos().saturating_sub(before);
        self.worked(seq, batch);
    }

    fn worked(&self, seq: u64, batch: Batch<R>) {
        let mut f = self.flight();
        f.worked.push((seq, batch));
        let awaited = f.awaited == Some(seq);
        drop(f);
        if awaited {
            self.next_ready.notify_one();
        }
    }

    /// What the calling thread does next, to deliver batch `next`.
    fn next(&self, next: u64) -> Next<R> {
        let mut f = self.flight();
        loop {
            if let Some(i) = f.worked.iter().position(|(seq, _)| *seq == next) {
                f.awaited = None;
                return Next::Deliver(f.worked.swap_remove(i).1);
            }
            if f.stopped || f.total.is_some_and(|total| next >= total) {
                return Next::End;
            }
            if f.in_flight < self.limit && f.total.is_none() {
                f.in_flight += 1;
                return Next::Read(f.free.pop());
            }
            f.awaited = Some(next);
            f = self
                .next_ready
                .wait(f)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// A delivered batch, emptied: its place in flight comes free.
    fn recycle(&self, batch: Batch<R>) {
        let mut f = self.flight();
        f.in_flight -= 1;
        f.free.push(batch);
        drop(f);
        self.slot_free.notify_one();
    }

    fn stop(&self) {
        self.flight().stopped = true;
        self.slot_free.notify_all();
        self.next_ready.notify_all();
    }
}

/// Stops a [`Pool`] when the thread holding it unwinds from a panic.
struct StopIfPanicking<'p, 'r, R: Default + Send>(&'p Pool<'r, R>);

impl<R: Default + Send> Drop for StopIfPanicking<'_, '_, R> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.stop();
        }
    }
}

impl<R: Default> Reading<'_, R> {
    /// Reads frames until a batch is handed over, or to the end of the capture; `weight` is the
    /// last batch worked's ([`BatchSize::reading`]).
    fn next(
        &mut self,
        spare: Option<Batch<R>>,
        size: BatchSize,
        weight: usize,
    ) -> Option<Batch<R>> {
        if self.finished {
            return None;
        }
        if spare.is_some() {
            self.spare = spare;
        }
        if !self.started {
            self.started = true;
            self.reader.window.refill_to(FIRST_BATCH_BYTES);
        }
        let reader = &mut *self.reader;
        let mut batching = Batching {
            batch: &mut self.batch,
            spare: &mut self.spare,
            ready: &mut self.ready,
            size,
            weight,
        };
        reader.pump(false, &mut batching);
        if batching.ready.is_none() {
            // The end: the last frames are still in the window.
            self.finished = true;
            let _ = batching.hand_over(&mut reader.window);
        }
        let ready = self.ready.take();
        self.sent += u64::from(ready.is_some());
        ready
    }
}

/// The reading loop's side of a [`Reading`]: frames gathered in a batch that takes the window's
/// buffer when it is full, or before the window is refilled.
struct Batching<'b, R> {
    batch: &'b mut Batch<R>,
    spare: &'b mut Option<Batch<R>>,
    ready: &'b mut Option<Batch<R>>,
    size: BatchSize,
    weight: usize,
}

impl<R: Default> Deliver for Batching<'_, R> {
    fn frame(&mut self, frame: &Frame<'_>, at: usize) -> ControlFlow<()> {
        let meta = Frame {
            data: &[],
            ..*frame
        };
        self.batch.frames.push((meta, at..at + frame.data.len()));
        ControlFlow::Continue(())
    }

    fn full(&self) -> bool {
        self.batch.frames.len() >= self.size.frames()
    }

    /// Hands the frames over with the buffer they are in (the window goes on in a recycled one,
    /// of the next batch's size), and stops the reading loop there.
    fn hand_over(&mut self, window: &mut Window) -> ControlFlow<()> {
        let size = self.size.reading(self.weight);
        let handed = !self.batch.frames.is_empty();
        if handed {
            let mut next = self.spare.take().unwrap_or_default();
            self.batch.data = window.hand_over(std::mem::take(&mut next.data), size);
            *self.ready = Some(std::mem::replace(self.batch, next));
        }
        window.refill_to(size);
        if handed {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }
}

impl<R: Default + Send> Batch<R> {
    /// Runs a worker's [`Ahead`] on every frame; returns the weight of the results, in bytes
    /// per 16 bytes of the frames that had room (those of a batch that overflowed would
    /// underrate it).
    fn work<A: Ahead<Results = R>>(&mut self, worker: &mut A, size: BatchSize) -> usize {
        let mut results = std::mem::take(&mut self.results);
        let mut worked = 0;
        for frame in self.each() {
            let room = A::size(&results) < size.bytes;
            if room {
                worked += frame.data.len();
            }
            worker.frame(&frame, &mut results, room);
        }
        let weight = (A::size(&results) * 16 / worked.max(1)).min(16 * 64);
        self.results = results;
        weight
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_are_large_for_few_threads_and_smaller_for_many() {
        let sizes: Vec<(usize, usize)> = [1, 2, 3, 4, 8, 16]
            .map(|w| {
                let size = BatchSize::for_threads(w);
                (size.bytes, size.frames())
            })
            .to_vec();
        assert_eq!(
            sizes,
            [
                (1 << 20, 16_384),
                (1 << 20, 16_384),
                (699_050, 10_922),
                (512 << 10, 8_192),
                (256 << 10, 4_096),
                (256 << 10, 4_096)
            ]
        );
        // Results weighing as much as the frames: half the batch is read.
        assert_eq!(BatchSize::for_threads(2).reading(16), 512 << 10);
        assert_eq!(BatchSize::for_threads(2).reading(UNKNOWN_WEIGHT), 16 << 10);
    }
}
