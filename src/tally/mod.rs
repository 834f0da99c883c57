//! What several reports count, below them in the layers: each report renders it its own way,
//! and none uses another report as a service.

pub mod budget;
pub mod profile_hint;
pub mod summary;
