//! The protocol description: the one table of every dialect's fields and messages, the snapshot
//! field profiles, and the catalog of rules. Everything else reads these; nothing restates them.

pub mod near;
pub mod profile;
pub mod registry;
pub mod rt;
pub mod rtnp;
pub mod rtype;
pub mod rules;
pub mod schema;
pub mod trie;

pub use rules::{Rule, RuleInfo, Severity, CATALOG};
pub use schema::{Direction, Display, Field, Group, Message, Named, Node, Role, Ty};
