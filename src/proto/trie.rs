//! Where a walk of the description is, and what a visited declaration means there: the registry's
//! described fields of one scope, arranged by the repeats and switch cases they sit in, each
//! carrying what a consumer attached to it (the display filter's atoms, the Parquet columns).
//!
//! A walk enters a node by a group's filter segment ([`FieldTrie::child`]; a repeat's items stay
//! under their list's segment, as the dissector names them) and looks a visited declaration up in
//! the node it is in ([`FieldTrie::get`]).

use std::cell::Cell;

use super::registry::same_field;
use super::schema::Field;

/// The described fields of one scope, by the groups they sit in, each with a `T`.
#[derive(Clone, Debug)]
pub struct FieldTrie<T> {
    nodes: Vec<Node<T>>,
    /// Recent answers of [`FieldTrie::get`] by (declaration address, node): a walk meets the same
    /// few declarations again and again, and comparing them by content costs more than the walk.
    /// Declarations are compared by content because a `const` table may have several copies.
    recent: [Cell<(usize, usize, u32)>; RECENT],
}

const RECENT: usize = 64;
/// In [`FieldTrie::recent`]: the declaration has nothing attached there.
const NONE: u32 = u32::MAX;

/// A walk outside every group the trie knows: nothing is found below it.
pub const DEAD: usize = usize::MAX;
/// The scope's own node, where a walk starts.
pub const ROOT: usize = 0;

#[derive(Clone, Debug)]
struct Node<T> {
    /// Groups by filter segment.
    children: Vec<(&'static str, usize)>,
    /// Field declarations and what is attached to them.
    fields: Vec<(&'static Field, T)>,
}

impl<T> Default for FieldTrie<T> {
    fn default() -> Self {
        FieldTrie {
            nodes: vec![Node {
                children: Vec::new(),
                fields: Vec::new(),
            }],
            recent: std::array::from_fn(|_| Cell::new((0, DEAD, NONE))),
        }
    }
}

impl<T: Default> FieldTrie<T> {
    /// What is attached to `decl` under the groups `path` (created empty the first time).
    pub fn entry(&mut self, path: &[&'static str], decl: &'static Field) -> &mut T {
        let mut at = ROOT;
        for segment in path {
            at = self.node_for(at, segment);
        }
        let fields = &mut self.nodes[at].fields;
        let i = match fields.iter().position(|(d, _)| std::ptr::eq(*d, decl)) {
            Some(i) => i,
            None => {
                fields.push((decl, T::default()));
                fields.len() - 1
            }
        };
        &mut fields[i].1
    }
}

impl<T> FieldTrie<T> {
    /// The node below `at` for the group `segment`, made when missing.
    pub fn node_for(&mut self, at: usize, segment: &'static str) -> usize {
        match self.nodes[at].children.iter().find(|c| c.0 == segment) {
            Some(&(_, child)) => child,
            None => {
                self.nodes.push(Node {
                    children: Vec::new(),
                    fields: Vec::new(),
                });
                let child = self.nodes.len() - 1;
                self.nodes[at].children.push((segment, child));
                child
            }
        }
    }

    /// The node a walk at `at` enters with the group whose filter segment is `segment`.
    pub fn child(&self, at: usize, segment: &str) -> usize {
        self.nodes
            .get(at)
            .and_then(|n| n.children.iter().find(|c| c.0 == segment))
            .map_or(DEAD, |c| c.1)
    }

    /// What is attached to `field`'s declaration at `at`, if anything.
    pub fn get(&self, at: usize, field: &Field) -> Option<&T> {
        let node = self.nodes.get(at)?;
        let address = field as *const Field as usize;
        let slot = &self.recent[(address >> 3 ^ at.wrapping_mul(31)) % RECENT];
        let (seen, seen_at, found) = slot.get();
        let found = if seen == address && seen_at == at {
            found
        } else {
            let found = node
                .fields
                .iter()
                .position(|(d, _)| d.name == field.name && same_field(d, field))
                .map_or(NONE, |i| i as u32);
            slot.set((address, at, found));
            found
        };
        node.fields.get(found as usize).map(|(_, t)| t)
    }
}
