//! Counts shared by several reports, below them in the layers: each report renders them its own
//! way, and none uses another report as a service.

pub mod summary;
