//! A life's fields as columns, for the views that give each field of an entity's state a column
//! of its own (the dataset's `entity_states`): every number the description's entity blocks
//! carry after the entity id (what [`super::Gather`] collects), one column per quantity (a
//! spawn's position and a snapshot's are one, as the world keeps them) and one per field name
//! otherwise, in the description's order.

use super::life::{Num, Slot};
use crate::proto::profile::{BitSlot, Profile};
use crate::proto::schema::{Field, Node, Quantity, Role, Ty};
use crate::proto::{rt, rtype};

/// One column of a life's state.
#[derive(Clone, Debug)]
pub struct StateColumn {
    /// The quantity's name, or the fields' name.
    pub name: &'static str,
    pub quantity: Quantity,
    /// Whether a field it holds is a float or scaled: its values are then floats, else integers.
    pub float: bool,
    /// The filter fields' labels, for the docs.
    pub label: &'static str,
}

/// The columns of a life's state, for the snapshot profiles a run reads with (their masked fields
/// are entity fields).
#[derive(Clone, Debug, Default)]
pub struct StateColumns {
    pub columns: Vec<StateColumn>,
}

impl StateColumns {
    pub fn new(profiles: &[Profile]) -> StateColumns {
        let mut fields = Vec::new();
        for profile in profiles {
            for m in rtype::MESSAGES.iter().chain(rt::MESSAGES) {
                let after_body = walk(m.body, profile, false, &mut fields);
                for v in m.variants {
                    walk(v.nodes, profile, v.extends_body && after_body, &mut fields);
                }
            }
        }
        let mut columns: Vec<StateColumn> = Quantity::NAMED
            .iter()
            .filter_map(|&(quantity, name)| {
                let of: Vec<&&Field> = fields.iter().filter(|f| f.quantity == quantity).collect();
                Some(StateColumn {
                    name,
                    quantity,
                    float: of.iter().any(|f| floating(f)),
                    label: of.first()?.label,
                })
            })
            .collect();
        for f in fields.iter().filter(|f| f.quantity == Quantity::None) {
            match columns
                .iter_mut()
                .find(|c| c.quantity == Quantity::None && c.name == f.name)
            {
                Some(c) => c.float |= floating(f),
                None => columns.push(StateColumn {
                    name: f.name,
                    quantity: Quantity::None,
                    float: floating(f),
                    label: f.label,
                }),
            }
        }
        StateColumns { columns }
    }

    /// The column of `field`'s values.
    pub fn column_of(&self, field: &Field) -> Option<usize> {
        self.columns.iter().position(|c| match field.quantity {
            Quantity::None => c.quantity == Quantity::None && c.name == field.name,
            q => c.quantity == q,
        })
    }

    /// Each column's value in `slots` (a life's), as `(column, value)`; where two slots fill one
    /// column (fields of one name in two messages), the one that changed last.
    pub fn values<'a>(&'a self, slots: &'a [Slot]) -> impl Iterator<Item = (usize, Num)> + 'a {
        slots.iter().enumerate().filter_map(move |(i, s)| {
            let c = self.column_of(s.field)?;
            let later = slots[i + 1..]
                .iter()
                .any(|t| self.column_of(t.field) == Some(c) && t.changed.frame >= s.changed.frame);
            (!later).then_some((c, s.value))
        })
    }
}

fn floating(f: &Field) -> bool {
    f.ty == Ty::F32 || f.divisor != 1
}

/// Collects the entity fields of `nodes`: after an entity id (`after_id`: one came before them).
/// Returns whether the fields after them follow an entity id.
fn walk(
    nodes: &'static [Node],
    profile: &Profile,
    after_id: bool,
    out: &mut Vec<&'static Field>,
) -> bool {
    let mut after = after_id;
    for node in nodes {
        match node {
            Node::Field(f) => take(f, &mut after, out),
            Node::Repeat { count, item } => {
                take(count, &mut after, out);
                walk(item.nodes, profile, after, out);
            }
            Node::Switch { tag, cases, .. } => {
                take(tag, &mut after, out);
                for case in *cases {
                    walk(case.group.nodes, profile, after, out);
                }
            }
            Node::Masked => {
                for slot in profile.bits() {
                    if let BitSlot::Field(f) = slot {
                        take(f, &mut after, out);
                    }
                }
            }
        }
    }
    after
}

/// Takes `f` if it is an entity field; an entity id makes the fields after it entity fields.
fn take(f: &'static Field, after: &mut bool, out: &mut Vec<&'static Field>) {
    match f.role {
        Role::EntityId => *after = true,
        Role::None if *after && f.array == 0 && f.ty != Ty::Str8 => out.push(f),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_first_then_the_fields_by_name() {
        let columns = StateColumns::new(&[Profile::bundled("reference-17byte").unwrap()]);
        let names: Vec<&str> = columns.columns.iter().map(|c| c.name).collect();
        assert_eq!(names[..5], ["pos_x", "pos_y", "vel_x", "vel_y", "health"]);
        assert!(names.contains(&"max_health"), "{names:?}");
        assert!(!names.contains(&"entity_id") && !names.contains(&"id"));
        assert!(!names.contains(&"animation_data"));
        // LevelInit's boss trailer follows no entity id.
        assert!(!names.contains(&"boss_count"));
        let float = |name: &str| {
            columns
                .columns
                .iter()
                .find(|c| c.name == name)
                .unwrap()
                .float
        };
        assert!(float("pos_x"));
        assert!(!float("health"));
    }
}
