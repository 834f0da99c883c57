//! The description's messages, its framing (length, checksum, compression) and its rules.

use super::keys::{choice, identifier, integer, text, Keys};
use super::{err, Loader, Result, MAX_MESSAGES};
use crate::describe::model::*;
use crate::describe::yaml::Node;
use crate::proto::near::hint;
use crate::proto::Severity;

impl Loader {
    /// `rules`: the description's own rules, after the mechanism's.
    pub(super) fn rule_list(&mut self, node: &Node, dialect: &str) -> Result<()> {
        let Some(items) = node.items() else {
            return err(node, "rules must be a list");
        };
        let checks: Vec<(Check, &str)> = Check::ALL.iter().map(|c| (c.0, c.1)).collect();
        for item in items {
            let keys = Keys::of(
                item,
                "a rule",
                &["id", "kind", "severity", "section", "summary"],
            )?;
            let id_node = keys.need("id", "a rule")?;
            let id = text(id_node, "a rule id")?.to_string();
            let good = id.len() <= 64
                && id.split('.').all(|p| {
                    !p.is_empty()
                        && p.chars().all(|c| {
                            c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_'
                        })
                });
            if !good || !id.starts_with(&format!("{dialect}.")) {
                return err(id_node, format!("a rule id is `{dialect}.` then dot-separated lowercase words (`{dialect}.crc.mismatch`)"));
            }
            let severity = match keys.get("severity") {
                Some(n) => choice(
                    n,
                    "a severity",
                    &[
                        (Severity::Error, "error"),
                        (Severity::Warning, "warning"),
                        (Severity::Info, "info"),
                    ],
                )?,
                None => Severity::Error,
            };
            let opt = |key: &str| -> Result<Option<String>> {
                keys.get(key)
                    .map(|n| text(n, key).map(str::to_string))
                    .transpose()
            };
            let (section, summary) = (opt("section")?, opt("summary")?);
            let index = match keys.get("kind") {
                Some(n) => {
                    let check = choice(n, "a rule kind", &checks)?;
                    Description::rule_index(check)
                }
                None => {
                    if self.rules.iter().any(|r| r.id == id) {
                        return err(id_node, format!("rule `{id}` is given twice"));
                    }
                    self.rules.push(Rule {
                        id: id.clone(),
                        severity,
                        section: String::new(),
                        summary: String::new(),
                    });
                    self.rules.len() - 1
                }
            };
            let rule = &mut self.rules[index];
            rule.id = id;
            if keys.get("severity").is_some() || index >= Check::ALL.len() {
                rule.severity = severity;
            }
            if let Some(s) = section {
                rule.section = s;
            }
            if let Some(s) = summary {
                rule.summary = s;
            }
        }
        Ok(())
    }

    /// `messages`: each message's code, name, direction, role and fields.
    pub(super) fn messages(&mut self, node: &Node) -> Result<Vec<Message>> {
        let Some(entries) = node.entries() else {
            return err(node, "messages must map type values to messages");
        };
        if entries.len() > MAX_MESSAGES {
            return err(node, format!("more than {MAX_MESSAGES} messages"));
        }
        let mut out: Vec<Message> = Vec::new();
        for (k, v) in entries {
            let code = integer(k, "a message type value")?;
            let keys = Keys::of(
                v,
                "a message",
                &["id", "name", "role", "direction", "section", "seq", "doc"],
            )?;
            let id = identifier(keys.need("id", "a message")?, "a message id")?;
            if let Some(other) = out.iter().find(|m| m.id == id || m.code == code) {
                return err(
                    k,
                    format!(
                        "message `{id}` ({code:#x}) repeats the id or type value of `{}`",
                        other.id
                    ),
                );
            }
            let name = match keys.get("name") {
                Some(n) => text(n, "a message name")?.to_string(),
                None => id.to_uppercase(),
            };
            let roles: Vec<(MessageRole, &str)> = MessageRole::ALL.to_vec();
            let role = keys
                .get("role")
                .map(|n| choice(n, "a message role", &roles))
                .transpose()?;
            let direction = match keys.get("direction") {
                Some(n) => choice(
                    n,
                    "a direction",
                    &[
                        (Direction::ClientToServer, "client-to-server"),
                        (Direction::ServerToClient, "server-to-client"),
                        (Direction::Both, "both"),
                    ],
                )?,
                None => Direction::Both,
            };
            let section = match keys.get("section") {
                Some(n) => text(n, "a section")?.to_string(),
                None => String::new(),
            };
            let seq = match keys.get("seq") {
                Some(n) => self.seq(n, "seq")?,
                None => Vec::new(),
            };
            out.push(Message {
                code,
                id,
                name,
                role,
                direction,
                section,
                seq,
            });
        }
        Ok(out)
    }

    /// `framing`: the length field and what it covers, the checksum, the compression, and how
    /// many messages a datagram holds.
    #[allow(clippy::type_complexity)]
    pub(super) fn framing(
        &mut self,
        node: &Node,
        header: &[Field],
        footer: &[Field],
    ) -> Result<(
        Option<LengthRule>,
        Option<ChecksumRule>,
        Option<CompressionRule>,
        bool,
    )> {
        let keys = Keys::of(
            node,
            "framing",
            &["length", "checksum", "compression", "messages-per-datagram"],
        )?;
        let header_field = |n: &Node| -> Result<usize> {
            let name = text(n, "a header field")?;
            match header.iter().position(|f| f.id == name) {
                Some(i) if matches!(header[i].kind, Kind::Int { .. } | Kind::Bits { .. }) => Ok(i),
                Some(_) => err(n, format!("`{name}` must be an integer field")),
                None => err(
                    n,
                    format!(
                        "the header has no field `{name}`{}",
                        hint(name, header.iter().map(|f| f.id.as_str()))
                    ),
                ),
            }
        };
        let length = match keys.get("length") {
            None => None,
            Some(n) => {
                let k = Keys::of(n, "framing.length", &["field", "covers", "adjust"])?;
                let field = header_field(k.need("field", "framing.length")?)?;
                let covers = match k.get("covers") {
                    Some(c) => choice(
                        c,
                        "what a length covers",
                        &[
                            (LengthCovers::Body, "body"),
                            (LengthCovers::Message, "message"),
                            (LengthCovers::Datagram, "datagram"),
                        ],
                    )?,
                    None => LengthCovers::Body,
                };
                let adjust = k
                    .get("adjust")
                    .map(|a| integer(a, "adjust"))
                    .transpose()?
                    .unwrap_or(0);
                Some(LengthRule {
                    field,
                    covers,
                    adjust,
                })
            }
        };
        let checksum = match keys.get("checksum") {
            None => None,
            Some(n) => {
                let k = Keys::of(n, "framing.checksum", &["algorithm", "field", "covers"])?;
                let algorithm = choice(
                    k.need("algorithm", "framing.checksum")?,
                    "a checksum algorithm",
                    ChecksumAlgorithm::ALL,
                )?;
                let fnode = k.need("field", "framing.checksum")?;
                let name = text(fnode, "a field")?;
                let field = match (
                    header.iter().position(|f| f.id == name),
                    footer.iter().position(|f| f.id == name),
                ) {
                    (Some(i), _) => Place::Header(i),
                    (None, Some(i)) => Place::Footer(i),
                    _ => {
                        return err(
                            fnode,
                            format!(
                                "no header or footer field is named `{name}`{}",
                                hint(name, header.iter().chain(footer).map(|f| f.id.as_str()))
                            ),
                        )
                    }
                };
                let (from, to) = match k.get("covers") {
                    None => (0, -4),
                    Some(c) => match c.items() {
                        Some([a, b]) => (integer(a, "covers")?, integer(b, "covers")?),
                        _ => return err(c, "covers is [from, to]: byte offsets in the datagram, negative from its end"),
                    },
                };
                Some(ChecksumRule {
                    algorithm,
                    field,
                    from,
                    to,
                })
            }
        };
        let compression = match keys.get("compression") {
            None => None,
            Some(n) => {
                let k = Keys::of(
                    n,
                    "framing.compression",
                    &["algorithm", "flag", "mask", "original-size"],
                )?;
                let algorithm = choice(
                    k.need("algorithm", "framing.compression")?,
                    "a compression",
                    &[
                        (CompressionAlgorithm::Lz4Block, "lz4-block"),
                        (CompressionAlgorithm::Lz4Frame, "lz4-frame"),
                        (CompressionAlgorithm::Zlib, "zlib"),
                    ],
                )?;
                let flag = header_field(k.need("flag", "framing.compression")?)?;
                let mask = match k.get("mask") {
                    Some(m) => integer(m, "mask")? as u64,
                    None => u64::MAX,
                };
                let original_size = k.get("original-size").map(header_field).transpose()?;
                if algorithm == CompressionAlgorithm::Lz4Block && original_size.is_none() {
                    return err(n, "lz4-block needs `original-size`: an LZ4 block does not say how large it decompresses");
                }
                Some(CompressionRule {
                    algorithm,
                    flag,
                    mask,
                    original_size,
                })
            }
        };
        let many = match keys.get("messages-per-datagram") {
            Some(n) => choice(n, "a count", &[(false, "one"), (true, "many")])?,
            None => false,
        };
        Ok((length, checksum, compression, many))
    }
}
