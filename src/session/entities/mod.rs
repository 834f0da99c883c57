//! Entity lifecycles: which entities each conversation spawned, updated and destroyed, the
//! findings only that shows (an update after ENTITY_DESTROYED, a second spawn of a live id, an
//! update of an entity the client was never given, a ghost the server's full state left out,
//! entities never destroyed), and per entity how often it was updated.
//!
//! A full state ([`full_state`]: a complete SERVER_SNAPSHOT_CHUNK set, an rtnp snapshot) names
//! every entity the server holds: an entity the client holds that it leaves out is a ghost. An
//! update of an id neither spawned nor in a full state is of an unknown entity; it is judged
//! once the conversation has a baseline (a spawn or a full state), so that a capture begun in the
//! middle of a game does not report every entity the client already held.
//!
//! The analysis feeds every datagram's [`EntityRef`]s in order ([`Entities::observe`]). State is
//! one record per entity id of a conversation, [`MAX_ENTITIES`] at most over the capture: a
//! destroyed entity is kept [`RETIRE_AFTER_NANOS`] of capture time (to catch late updates), then
//! retired into its conversation's totals ([`Lives`]), so memory follows the entities alive, not
//! the capture's length. Entities past the cap get no record, no lifecycle findings and no
//! per-entity figures (reported once as `session.entity-limit`).
//!
//! `storage.rs` holds the records and the bounds on their memory; `lifecycle.rs`, what each message
//! does to them and the findings that raises.

mod lifecycle;
mod storage;
#[cfg(test)]
mod tests;

pub use lifecycle::{full_state, lifecycle, MAX_FULL_STATE_IDS};
pub use storage::{
    At, Entities, Entity, Gap, IdHasher, IdMap, Lives, Resolved, State, MAX_ENTITIES, RATE_EDGES,
    RETIRE_AFTER_NANOS, SHARE_EDGES,
};
