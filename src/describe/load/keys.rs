//! Reading YAML nodes: a map's keys checked against those it may have, and scalars of each
//! kind, each error placed at its node.

use super::{err, Result};
use crate::describe::yaml::{Node, Yaml};
use crate::proto::near::hint;

/// A map's entries by key, checked against the keys it may have.
pub(super) struct Keys<'a> {
    pub(super) map: &'a Node,
    entries: &'a [(Node, Node)],
}

impl<'a> Keys<'a> {
    pub(super) fn of(node: &'a Node, what: &str, allowed: &[&str]) -> Result<Keys<'a>> {
        let Some(entries) = node.entries() else {
            return err(node, format!("{what} must be a map, not {}", node.kind()));
        };
        for (k, _) in entries {
            let key = k.text().unwrap_or_default();
            if !allowed.contains(&key) {
                return err(
                    k,
                    format!(
                        "`{key}` is not a key of {what}{}",
                        hint(key, allowed.iter().copied())
                    ),
                );
            }
        }
        Ok(Keys { map: node, entries })
    }

    pub(super) fn get(&self, key: &str) -> Option<&'a Node> {
        self.entries
            .iter()
            .find(|(k, _)| k.text() == Some(key))
            .map(|(_, v)| v)
    }

    pub(super) fn need(&self, key: &str, what: &str) -> Result<&'a Node> {
        match self.get(key) {
            Some(v) => Ok(v),
            None => err(self.map, format!("{what} needs `{key}`")),
        }
    }
}

pub(super) fn text<'a>(node: &'a Node, what: &str) -> Result<&'a str> {
    match node.text() {
        Some(t) => Ok(t),
        None => err(node, format!("{what} must be a value, not {}", node.kind())),
    }
}

pub(super) fn integer(node: &Node, what: &str) -> Result<i64> {
    match node.integer() {
        Some(i) => Ok(i),
        None => err(node, format!("{what} must be an integer")),
    }
}

pub(super) fn identifier(node: &Node, what: &str) -> Result<String> {
    let t = text(node, what)?;
    let ok = t.len() <= 64
        && t.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && t.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !ok {
        return err(
            node,
            format!("{what} `{t}` must be lowercase letters, digits and `_`, starting with a letter or `_`"),
        );
    }
    Ok(t.to_string())
}

/// A word of a closed list.
pub(super) fn choice<T: Copy>(node: &Node, what: &str, list: &[(T, &str)]) -> Result<T> {
    let t = text(node, what)?;
    match list.iter().find(|(_, name)| *name == t) {
        Some((v, _)) => Ok(*v),
        None => {
            let near = hint(t, list.iter().map(|x| x.1));
            let all = list.iter().map(|x| x.1).collect::<Vec<_>>().join(", ");
            let list = if near.is_empty() {
                format!("; one of: {all}")
            } else {
                near
            };
            err(node, format!("`{t}` is not {what}{list}"))
        }
    }
}

/// Bytes as a list of integers 0-255 or a string of ASCII.
pub(super) fn bytes(node: &Node, what: &str) -> Result<Vec<u8>> {
    match &node.value {
        Yaml::Scalar(s, _) if node.integer().is_none() => Ok(s.as_bytes().to_vec()),
        Yaml::Seq(items) => items
            .iter()
            .map(|i| match i.integer() {
                Some(b @ 0..=255) => Ok(b as u8),
                _ => err(
                    i,
                    format!("{what}: each byte must be an integer from 0 to 255"),
                ),
            })
            .collect(),
        _ => err(node, format!("{what} must be a list of bytes or a string")),
    }
}
