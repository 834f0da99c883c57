//! Dialect descriptions: a team's own protocol, described in a YAML file (docs/dialect-format.md),
//! loaded, and decoded by interpretation. The description's own module: the format's words
//! (roles, checks, primitives) live here and nowhere else.

pub mod decode;
pub mod expr;
pub mod ksy;
pub mod load;
pub mod loaded;
pub mod lua;
pub mod model;
pub mod names;
pub mod view;
pub mod yaml;

use std::path::Path;

pub use model::Description;
pub use names::Names;

/// A description with its field registry: what every command needs.
pub struct Described {
    pub description: Description,
    pub names: Names,
}

/// The commented starting file `dialect new` writes.
pub const TEMPLATE: &str = include_str!("template.yaml");

impl Described {
    /// Loads and checks a description from its text; errors name `file`, line and column.
    pub fn from_text(file: &str, text: &str) -> Result<Described, String> {
        let description = load::load(text).map_err(|e| e.in_file(file))?;
        let names = Names::new(&description).map_err(|e| format!("{file}: {e}"))?;
        Ok(Described { description, names })
    }

    /// Reads and loads the description at `path` (at most [`yaml::MAX_BYTES`] are read).
    pub fn open(path: &Path) -> Result<Described, String> {
        use std::io::Read;
        let shown = path.display().to_string();
        let file = std::fs::File::open(path).map_err(|e| format!("{shown}: {e}"))?;
        let mut bytes = Vec::new();
        file.take(yaml::MAX_BYTES as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("{shown}: {e}"))?;
        if bytes.len() > yaml::MAX_BYTES {
            return Err(format!(
                "{shown}: the description is larger than {} bytes",
                yaml::MAX_BYTES
            ));
        }
        let text = String::from_utf8(bytes).map_err(|e| {
            format!(
                "{shown}: not UTF-8 text (byte {})",
                e.utf8_error().valid_up_to()
            )
        })?;
        Described::from_text(&shown, &text)
    }
}
