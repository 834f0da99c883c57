//! Session analysis: per conversation, what happened and how well — handshake progress, traffic
//! per direction, snapshot rate and jitter, round-trip times, sequence loss, duplicates and
//! reorders, LevelInit delivery, compression — and the session-level findings (`session.*`).
//!
//! The pipeline calls [`Analysis::observe`] with every decoded datagram of every dialect, then
//! [`Analysis::finish`] at the end of the run; findings go out as [`LooseFinding`]s. What a
//! message means to the session is decided in one place ([`Role::of`]), so the rest is
//! dialect-neutral. Memory is bounded: each conversation has a fixed-size record (about 4 KiB, plus
//! 2.5 KiB per long-enough series of snapshot gaps or round trips), and only the first
//! [`MAX_ANALYSED`] conversations get one. Steady traffic allocates nothing per datagram.

mod dist;
mod recent;
/// The hash duplicates are found by (a [`DatagramEvent`]'s `hash`).
pub use recent::hash as bytes_hash;
mod role;
mod seq;
mod session;

pub use dist::Durations;
pub use recent::{RING as DUPLICATE_RING, WINDOW_NANOS as DUPLICATE_WINDOW_NANOS};
pub use role::{Role, Step};
pub use seq::{Arrival, Sequence};
pub use session::{
    Compression, LevelInit, Observed, Outcome, Session, StepSeen, Traffic, DISCONNECT_GRACE_NANOS,
    LEVELINIT_JUDGED_AFTER_NANOS, MIN_RATE_TICKS,
};

use crate::session::entities::Entities;
use crate::session::event::{DatagramEvent, LooseFinding};

/// A gap of over 3 periods is a stall: one or two late or lost snapshots are jitter an
/// interpolating client hides, three in a row show as a freeze.
pub const DEFAULT_STALL_MULTIPLE: f64 = 3.0;

/// Conversations analysed; datagrams of later ones are only counted.
pub const MAX_ANALYSED: usize = 4096;

/// What the analysis judges against.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    /// The nominal snapshot rate (002 §6.1: "e.g., 60 Hz").
    pub snapshot_hz: f64,
    /// How far the measured rate may be from nominal, as a fraction of it.
    pub snapshot_tolerance: f64,
    /// A periodic stream stalls when a gap between two of its datagrams is longer than this many
    /// of its periods (its mean interval, at least the nominal one).
    pub stall_multiple: f64,
    /// Keep per-entity figures (updates, rates, gaps) beside the entities' lifecycles, for the
    /// reports that show them.
    pub entity_figures: bool,
    /// Compare the clients of one server (`session.clients-disagree`): the updates a shared
    /// server sends are walked once more, unless a client was sent the same bytes as another.
    /// `check` judges it; `world` compares on its own, and keeps both values.
    pub compare_clients: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            snapshot_hz: 60.0,
            snapshot_tolerance: 0.2,
            stall_multiple: DEFAULT_STALL_MULTIPLE,
            entity_figures: false,
            compare_clients: false,
        }
    }
}

impl Config {
    /// Whether a measured snapshot rate is within tolerance of nominal.
    pub fn rate_ok(&self, hz: f64) -> bool {
        (hz - self.snapshot_hz).abs() <= self.snapshot_hz * self.snapshot_tolerance
    }
}

/// The analysis of every conversation of a run.
#[derive(Debug, Default)]
pub struct Analysis {
    config: Config,
    /// Indexed by conversation id − 1 (ids are dense, from 1); boxed so growing the list moves
    /// pointers, not records.
    sessions: Vec<Option<Box<Session>>>,
    unanalysed: u64,
    /// The entities of the analysed conversations.
    entities: Entities,
    /// What the last datagram did to its conversation (nothing, for one not analysed).
    last: Observed,
}

impl Analysis {
    pub fn new(config: Config) -> Analysis {
        Analysis {
            config,
            entities: Entities::new(config.entity_figures),
            ..Analysis::default()
        }
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Analyses one datagram, after the sink saw it; session findings go to `emit`.
    pub fn observe<F: FnMut(LooseFinding)>(&mut self, event: &DatagramEvent<'_>, emit: &mut F) {
        let Some(index) = (event.conversation as usize)
            .checked_sub(1)
            .filter(|i| *i < MAX_ANALYSED)
        else {
            self.unanalysed += 1;
            self.last = Observed::default();
            self.entities.observe(event, None, 0, emit);
            return;
        };
        if self.sessions.len() <= index {
            self.sessions.resize_with(index + 1, || None);
        }
        let session = self.sessions[index].get_or_insert_with(|| Box::new(Session::new(event)));
        session.observe(event, &self.config, emit);
        self.last = session.last;
        // Entities of a datagram that fails its integrity check, or of a repeat, are not news.
        let entities = (self.last.judged && !self.last.duplicate).then_some(event.entities);
        let ticks = session.snapshot_tick_count();
        self.entities.observe(event, entities, ticks, emit);
    }

    /// Judges what can only be judged at the end (LevelInit acknowledged, snapshot rate,
    /// entities never destroyed).
    pub fn finish<F: FnMut(LooseFinding)>(&mut self, emit: &mut F) {
        for s in self.sessions.iter().flatten() {
            s.finish(&self.config, emit);
        }
        self.entities.finish(emit);
    }

    /// What the last datagram observed did to its conversation.
    pub fn last(&self) -> Observed {
        self.last
    }

    /// The entities of the analysed conversations.
    pub fn entities(&self) -> &Entities {
        &self.entities
    }

    /// The analysed conversations, by id.
    pub fn sessions(&self) -> impl Iterator<Item = &Session> {
        self.sessions.iter().flatten().map(|s| &**s)
    }

    pub fn session(&self, conversation: u32) -> Option<&Session> {
        self.sessions
            .get((conversation as usize).checked_sub(1)?)?
            .as_deref()
    }

    /// Datagrams of conversations past [`MAX_ANALYSED`] (or of none).
    pub fn unanalysed_datagrams(&self) -> u64 {
        self.unanalysed
    }
}

#[cfg(test)]
mod tests;
