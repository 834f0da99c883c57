//! Snapshot field profiles: which field each update-mask bit gates.
//!
//! The document's table (001 §6.2) is the default. Real builds differ (spec-notes B: i16 × 10
//! positions, a score on bit 10, status and lives packed in one byte), so a profile file can
//! override any bit:
//!
//! ```toml
//! name = "reference-17byte"
//! [bits]
//! 1 = { name = "pos_x", type = "i16", divisor = 10 }
//! 10 = { name = "score", type = "i32" }
//! 7 = { type = "reserved" }
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::rtype::STATUS_FLAGS;
use super::schema::{Check, Display, Field, Named, Quantity, Role, Ty};

/// Number of bits in the update mask.
pub const MASK_BITS: usize = 16;

/// Largest profile text accepted.
const MAX_TEXT: usize = 64 * 1024;

/// The profiles shipped inside the binary, by name: `--profile reference-17byte` needs no path.
/// Their files stay in `samples/profiles/` for users to copy and edit.
pub const BUNDLED: &[(&str, &str)] = &[
    (
        "reference-17byte",
        include_str!("../../samples/profiles/reference-17byte.toml"),
    ),
    (
        "reference-15byte",
        include_str!("../../samples/profiles/reference-15byte.toml"),
    ),
];

/// The names (and what differs) of the profiles not bundled that findings name
/// ([`Profile::finding_name`]).
static REGISTERED: std::sync::Mutex<Vec<(&'static str, Option<&'static str>)>> =
    std::sync::Mutex::new(Vec::new());

/// What one mask bit means.
#[derive(Clone, Copy, Debug)]
pub enum BitSlot {
    /// The bit gates this field.
    Field(&'static Field),
    /// The document reserves the bit; its width is unknown.
    Reserved,
    /// The document does not define the bit; its width is unknown.
    Undefined,
}

/// A snapshot field layout: the document's, or one read from a profile file.
#[derive(Clone, Debug)]
pub struct Profile {
    pub name: String,
    /// What differs from the document's layout, in a few words (the profile file's `differs`):
    /// what the `rtype.snapshot.layout` finding says of a capture found in this layout.
    pub differs: Option<String>,
    bits: [BitSlot; MASK_BITS],
    /// Made from `bits` once, when they are set.
    plain: PlainBits,
}

/// The mask bits that gate a plain number: 1, 2 or 4 bytes, not checked, and with no role but
/// the entity type's. The width of any set of them is three population counts, so a walk steps
/// over a block of them without reading it; each profile works them out once, not each
/// message its walk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PlainBits {
    /// The plain bits, by width.
    pub one: u16,
    pub two: u16,
    pub four: u16,
    /// The width of each plain bit's field (0 for the others).
    pub widths: [u8; MASK_BITS],
    /// The bits that are not plain: checked or variable fields, unknown widths.
    pub other: u16,
    /// The plain bits of role `EntityType`.
    pub typed: u16,
    /// The plain bits whose value is their raw integer (unsigned, not divided).
    pub whole: u16,
}

impl PlainBits {
    fn of(bits: &[BitSlot; MASK_BITS]) -> PlainBits {
        let mut plain = PlainBits::default();
        for (bit, slot) in bits.iter().enumerate() {
            let field = match slot {
                BitSlot::Field(f)
                    if f.array == 0
                        && f.check == Check::None
                        && matches!(f.role, Role::None | Role::EntityType) =>
                {
                    f.width()
                        .filter(|w| matches!(w, 1 | 2 | 4))
                        .map(|w| (*f, w))
                }
                _ => None,
            };
            let Some((f, w)) = field else {
                plain.other |= 1 << bit;
                continue;
            };
            plain.widths[bit] = w as u8;
            *match w {
                1 => &mut plain.one,
                2 => &mut plain.two,
                _ => &mut plain.four,
            } |= 1 << bit;
            if f.role == Role::EntityType {
                plain.typed |= 1 << bit;
            }
            if matches!(f.ty, Ty::U8 | Ty::U16 | Ty::U32) && f.divisor == 1 {
                plain.whole |= 1 << bit;
            }
        }
        plain
    }

    /// Bytes taken by the fields of `bits`, all plain numbers.
    pub fn width(&self, bits: u16) -> usize {
        ((bits & self.one).count_ones()
            + 2 * (bits & self.two).count_ones()
            + 4 * (bits & self.four).count_ones()) as usize
    }

    /// Whether every bit of `mask` gates a plain number.
    pub fn plain(&self, mask: u16) -> bool {
        mask & self.other == 0
    }
}

static DOCUMENT_FIELDS: [Field; 8] = [
    Field::new("entity_type", "Entity Type", Ty::U8).role(Role::EntityType),
    Field::new("pos_x", "Position X", Ty::F32).quantity(Quantity::PosX),
    Field::new("pos_y", "Position Y", Ty::F32).quantity(Quantity::PosY),
    Field::new("vel_x", "Velocity X", Ty::F32).quantity(Quantity::VelX),
    Field::new("vel_y", "Velocity Y", Ty::F32).quantity(Quantity::VelY),
    Field::new("health", "Health", Ty::U16).quantity(Quantity::Health),
    Field::new("status_flags", "Status Flags", Ty::U8).display(Display::Flags(STATUS_FLAGS)),
    Field::new("lives", "Lives", Ty::U8),
];

impl Profile {
    /// The table of document 001 §6.2.
    pub fn document() -> Profile {
        let mut bits = [BitSlot::Undefined; MASK_BITS];
        for (bit, field) in DOCUMENT_FIELDS[..7].iter().enumerate() {
            bits[bit] = BitSlot::Field(field);
        }
        bits[7] = BitSlot::Reserved;
        bits[8] = BitSlot::Reserved;
        bits[9] = BitSlot::Field(&DOCUMENT_FIELDS[7]);
        Profile {
            name: "document".into(),
            differs: None,
            bits,
            plain: PlainBits::of(&bits),
        }
    }

    /// What each mask bit means.
    pub fn bits(&self) -> &[BitSlot; MASK_BITS] {
        &self.bits
    }

    /// The bits that gate plain numbers.
    pub fn plain(&self) -> &PlainBits {
        &self.plain
    }

    /// The name of a bundled profile ([`BUNDLED`]) as the binary holds it, for findings that
    /// name it.
    pub fn bundled_name(name: &str) -> Option<&'static str> {
        BUNDLED.iter().map(|(n, _)| *n).find(|n| *n == name)
    }

    /// This profile's name as findings hold it (`'static`): a bundled profile's from the binary;
    /// another's (a configuration's) registered once per process, with what differs, for
    /// [`Profile::differs_of`]. Registered names are as many as the profiles a run loads.
    pub fn finding_name(&self) -> &'static str {
        if let Some(name) = Profile::bundled_name(&self.name) {
            return name;
        }
        let mut registered = REGISTERED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((name, _)) = registered.iter().find(|(n, _)| *n == self.name) {
            return name;
        }
        let name: &'static str = Box::leak(self.name.clone().into_boxed_str());
        let differs = self
            .differs
            .clone()
            .map(|d| &*Box::leak(d.into_boxed_str()));
        registered.push((name, differs));
        name
    }

    /// What differs from the document's layout in the profile findings call `name` (see
    /// [`Profile::finding_name`]).
    pub fn differs_of(name: &str) -> Option<String> {
        if let Some(profile) = Profile::bundled(name) {
            return profile.differs;
        }
        let registered = REGISTERED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        registered
            .iter()
            .find(|(n, _)| *n == name)
            .and_then(|(_, d)| d.map(str::to_owned))
    }

    /// Every profile shipped in the binary, in [`BUNDLED`]'s order.
    pub fn all_bundled() -> Vec<Profile> {
        BUNDLED
            .iter()
            .filter_map(|(name, _)| Profile::bundled(name))
            .collect()
    }

    /// A profile shipped in the binary ([`BUNDLED`]). Each is parsed once per process: parsing
    /// leaks its field names (fields are `'static`), and the summary asks for every bundled
    /// profile on every run.
    pub fn bundled(name: &str) -> Option<Profile> {
        static PARSED: std::sync::OnceLock<Vec<Option<Profile>>> = std::sync::OnceLock::new();
        let parsed = PARSED.get_or_init(|| {
            BUNDLED
                .iter()
                .map(|(_, text)| Profile::parse(text).ok())
                .collect()
        });
        let i = BUNDLED.iter().position(|(n, _)| *n == name)?;
        parsed[i].clone()
    }

    /// What `--profile ARG` names: the document's table (`document`), a bundled profile, or
    /// else a profile file.
    pub fn resolve(arg: &Path) -> Result<Profile, String> {
        if arg.as_os_str() == "document" {
            return Ok(Profile::document());
        }
        match arg.to_str().and_then(Profile::bundled) {
            Some(profile) => Ok(profile),
            None if !arg.exists() => {
                let names = || BUNDLED.iter().map(|(n, _)| *n);
                let typed = arg.to_str().unwrap_or_default();
                Err(format!(
                    "{}: no bundled profile of that name, and no such file{} (bundled: {})",
                    arg.display(),
                    super::near::hint(typed, names()),
                    names().collect::<Vec<_>>().join(", ")
                ))
            }
            None => Profile::load(arg),
        }
    }

    /// Reads a profile file: the document's table with the file's bits replacing its own.
    pub fn load(path: &Path) -> Result<Profile, String> {
        use std::io::Read as _;
        // A bounded read (/dev/zero, a pipe): one byte past the limit is enough for parse to refuse.
        let mut text = String::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_TEXT as u64 + 1).read_to_string(&mut text))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Profile::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parses profile text (see the module docs). Strings are leaked once, as fields are `'static`.
    pub fn parse(text: &str) -> Result<Profile, String> {
        if text.len() > MAX_TEXT {
            return Err(format!("profile larger than {MAX_TEXT} bytes"));
        }
        let file: ProfileFile = toml::from_str(text).map_err(|e| {
            format!(
                "invalid profile: {}",
                e.to_string().trim_end().replace('\n', "\n  ")
            )
        })?;
        let mut profile = Profile::document();
        profile.name = file.name.unwrap_or_else(|| "custom".into());
        profile.differs = file.differs;
        let line = |span: std::ops::Range<usize>| {
            text[..span.start.min(text.len())].lines().count().max(1)
        };
        // The line of each bit the file declares, for errors about it.
        let mut lines = [None; MASK_BITS];
        for (key, spec) in file.bits {
            let at = line(spec.span());
            let bit: usize =
                key.parse().ok().filter(|b| *b < MASK_BITS).ok_or_else(|| {
                    format!("line {at}: bit `{key}` is not a number from 0 to 15")
                })?;
            profile.bits[bit] = spec
                .into_inner()
                .into_slot(bit)
                .map_err(|e| format!("line {at}: {e}"))?;
            lines[bit] = Some(at);
        }
        // Two bits of one name would write one JSON key twice ("pos_x":1,"pos_x":2).
        for bit in 0..MASK_BITS {
            let Some(name) = profile.field(bit).map(|f| f.name) else {
                continue;
            };
            let same = (0..bit).find(|b| profile.field(*b).is_some_and(|f| f.name == name));
            if let Some(other) = same {
                let declared = if lines[bit].is_some() { bit } else { other };
                let (at, first) = if declared == bit {
                    (lines[bit], other)
                } else {
                    (lines[other], bit)
                };
                return Err(format!(
                    "line {}: bit {declared} is named `{name}` like bit {first}; every field needs its own name",
                    at.unwrap_or(1)
                ));
            }
        }
        profile.plain = PlainBits::of(&profile.bits);
        Ok(profile)
    }

    /// The field gated by `bit`, if it has a known width.
    pub fn field(&self, bit: usize) -> Option<&'static Field> {
        match self.bits.get(bit) {
            Some(BitSlot::Field(f)) => Some(f),
            _ => None,
        }
    }
}

impl Default for Profile {
    fn default() -> Self {
        Profile::document()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    name: Option<String>,
    differs: Option<String>,
    #[serde(default)]
    bits: BTreeMap<String, toml::Spanned<BitSpec>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BitSpec {
    #[serde(rename = "type")]
    ty: String,
    name: Option<String>,
    label: Option<String>,
    divisor: Option<u32>,
    /// Named bit masks, for flag bytes (e.g. `{ status = 0xF0, lives = 0x0F }`).
    flags: Option<BTreeMap<String, u32>>,
}

impl BitSpec {
    fn into_slot(self, bit: usize) -> Result<BitSlot, String> {
        let ty = match self.ty.as_str() {
            "reserved" => return Ok(BitSlot::Reserved),
            "undefined" => return Ok(BitSlot::Undefined),
            "u8" => Ty::U8,
            "u16" => Ty::U16,
            "u32" => Ty::U32,
            "i16" => Ty::I16,
            "i32" => Ty::I32,
            "f32" => Ty::F32,
            other => {
                return Err(format!(
                    "bit {bit}: unknown type `{other}` (u8 u16 u32 i16 i32 f32 reserved undefined)"
                ))
            }
        };
        let name = self
            .name
            .ok_or_else(|| format!("bit {bit}: a field needs a name"))?;
        let valid = |s: &str| {
            !s.is_empty()
                && s.len() <= 32
                && s.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        };
        if !valid(&name) {
            return Err(format!(
                "bit {bit}: name `{name}` must be 1-32 of a-z, 0-9, _"
            ));
        }
        let divisor = self.divisor.unwrap_or(1);
        if divisor == 0 || (divisor != 1 && ty == Ty::F32) {
            return Err(format!(
                "bit {bit}: divisor must be a positive integer, on an integer type"
            ));
        }
        let mut field = Field::new(
            leak(name.clone()),
            leak(self.label.unwrap_or(name.clone())),
            ty,
        );
        field.divisor = divisor;
        field.quantity = Quantity::of_profile_name(&name);
        if name == "entity_type" {
            field = field.role(Role::EntityType);
        }
        if let Some(flags) = self.flags {
            if flags.keys().any(|k| !valid(k)) || flags.len() > 16 {
                return Err(format!(
                    "bit {bit}: flag names must be 1-32 of a-z, 0-9, _ (at most 16)"
                ));
            }
            let bits = ty.width().unwrap_or(4) * 8;
            let room = if bits >= 32 {
                u32::MAX
            } else {
                (1 << bits) - 1
            };
            if let Some((flag, mask)) = flags.iter().find(|(_, m)| **m == 0 || **m & !room != 0) {
                return Err(format!(
                    "bit {bit}: flag `{flag}` has mask 0x{mask:X}, which does not fit the {bits}-bit {}",
                    ty.name()
                ));
            }
            let named: Vec<Named> = flags
                .into_iter()
                .map(|(n, mask)| Named {
                    value: mask,
                    name: leak(n),
                })
                .collect();
            field = field.display(Display::Flags(Vec::leak(named)));
        }
        Ok(BitSlot::Field(Box::leak(Box::new(field))))
    }
}

fn leak(s: String) -> &'static str {
    String::leak(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn document_table() {
        let p = Profile::document();
        assert_eq!(p.field(1).unwrap().name, "pos_x");
        assert_eq!(p.field(9).unwrap().name, "lives");
        assert!(matches!(p.bits[7], BitSlot::Reserved));
        assert!(matches!(p.bits[10], BitSlot::Undefined));
    }

    #[test]
    fn plain_bits_are_worked_out_once_per_profile() {
        let p = Profile::document();
        let plain = *p.plain();
        assert_eq!(
            (plain.one, plain.two, plain.four, plain.other),
            (0b10_0100_0001, 0b10_0000, 0b1_1110, 0xFD80)
        );
        assert_eq!(
            plain.widths,
            [1, 4, 4, 4, 4, 2, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0]
        );
        assert_eq!((plain.typed, plain.whole), (1, 0b10_0110_0001));
        assert_eq!(plain.width(0b10_0111_1111), 21);
        assert!(plain.plain(0x027F) && !plain.plain(0x0080));
        // A profile's bits are its own: a divided i16 and an i32 on a bit the document leaves
        // undefined are plain, not whole.
        let p = Profile::parse(
            "[bits]\n1 = { name = \"pos_x\", type = \"i16\", divisor = 10 }\n10 = { name = \"score\", type = \"i32\" }\n",
        )
        .unwrap();
        let plain = *p.plain();
        assert_eq!((plain.two & 0b10, plain.four & 1 << 10), (0b10, 1 << 10));
        assert_eq!((plain.widths[1], plain.widths[10]), (2, 4));
        assert_eq!(
            (plain.other & 1 << 10, plain.whole & (0b10 | 1 << 10)),
            (0, 0)
        );
    }

    #[test]
    fn overrides_bits() {
        let p = Profile::parse(
            "name = \"x\"\n[bits]\n1 = { name = \"pos_x\", type = \"i16\", divisor = 10 }\n10 = { name = \"score\", type = \"i32\" }\n",
        )
        .unwrap();
        let f = p.field(1).unwrap();
        assert_eq!((f.ty, f.divisor), (Ty::I16, 10));
        assert_eq!(p.field(10).unwrap().name, "score");
        assert_eq!(p.field(2).unwrap().ty, Ty::F32);
        assert_eq!(p.name, "x");
        assert_eq!(p.differs, None);
    }

    #[test]
    fn bundled_profiles_parse_and_are_found_by_name() {
        for (name, _) in BUNDLED {
            assert_eq!(Profile::bundled(name).unwrap().name, *name);
            assert_eq!(Profile::bundled_name(name), Some(*name));
            assert_eq!(Profile::resolve(Path::new(name)).unwrap().name, *name);
        }
        assert!(Profile::bundled("nope").is_none());
        // What each differs in is said once, in its file.
        assert_eq!(
            Profile::bundled("reference-17byte").unwrap().differs.as_deref(),
            Some("positions and velocities are i16 × 10, not f32; bit 6 packs status and lives; bit 10 is an i32 score")
        );
        assert_eq!(
            Profile::bundled("reference-15byte")
                .unwrap()
                .differs
                .as_deref(),
            Some("bit 10 is an i32 score")
        );
        let e = Profile::resolve(Path::new("nope")).unwrap_err();
        assert!(e.starts_with("nope: "), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn load_reads_no_more_than_the_limit() {
        let e = Profile::load(Path::new("/dev/zero")).unwrap_err();
        assert!(e.contains("larger than"), "{e}");
    }

    #[test]
    fn rejects_bad_profiles() {
        for bad in [
            "[bits]\n16 = { name = \"a\", type = \"u8\" }",
            "[bits]\n1 = { name = \"A b\", type = \"u8\" }",
            "[bits]\n1 = { name = \"a\", type = \"u64\" }",
            "[bits]\n1 = { type = \"u8\" }",
            "[bits]\n1 = { name = \"a\", type = \"f32\", divisor = 10 }",
            "[bits]\n1 = { name = \"a\", type = \"u8\", divisor = 0 }",
            "nonsense",
        ] {
            assert!(Profile::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn refuses_a_name_twice_and_flags_wider_than_their_field_saying_where() {
        let twice = "name = \"x\"\n[bits]\n1 = { name = \"pos_x\", type = \"i16\" }\n\
                     2 = { name = \"pos_x\", type = \"i16\" }\n";
        assert_eq!(
            Profile::parse(twice).unwrap_err(),
            "line 4: bit 2 is named `pos_x` like bit 1; every field needs its own name"
        );
        // Bit 10 named like the document's bit 2.
        let clash = "[bits]\n10 = { name = \"pos_y\", type = \"i32\" }\n";
        assert!(Profile::parse(clash)
            .unwrap_err()
            .starts_with("line 2: bit 10 is named `pos_y` like bit 2"));
        let wide =
            "[bits]\n\n6 = { name = \"s\", type = \"u8\", flags = { a = 0x0F, b = 0x1F0 } }\n";
        assert_eq!(
            Profile::parse(wide).unwrap_err(),
            "line 3: bit 6: flag `b` has mask 0x1F0, which does not fit the 8-bit u8"
        );
        let e = Profile::load(Path::new("no/such.toml")).unwrap_err();
        assert!(e.starts_with("no/such.toml: "), "{e}");
    }
}
