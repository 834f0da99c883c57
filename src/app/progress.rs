//! A progress bar on stderr for long work, drawn only on a terminal: a ticker thread copies a
//! counter the work bumps (an atomic store, nothing drawn on the work's thread) into the bar every
//! 100 ms, from 300 ms on so that short work never shows one; dropped, it stops and is erased.

use std::io::IsTerminal as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub struct Progress {
    bar: indicatif::ProgressBar,
    stop: Arc<AtomicBool>,
}

impl Progress {
    /// A bar over `len` units (a spinner when unknown) in indicatif's `template`, fed from
    /// `counter`; `None` when stderr is not a terminal.
    pub fn on_terminal(
        len: Option<u64>,
        template: &str,
        counter: Arc<AtomicU64>,
    ) -> Option<Progress> {
        if !std::io::stderr().is_terminal() {
            return None;
        }
        let bar =
            indicatif::ProgressBar::with_draw_target(len, indicatif::ProgressDrawTarget::stderr());
        bar.set_style(
            indicatif::ProgressStyle::with_template(template)
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        let stop = Arc::new(AtomicBool::new(false));
        let (ticker, done) = (bar.clone(), stop.clone());
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            while !done.load(Ordering::Relaxed) {
                ticker.set_position(counter.load(Ordering::Relaxed));
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        Some(Progress { bar, stop })
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.bar.finish_and_clear();
    }
}
