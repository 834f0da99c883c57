//! What several reports count, below them in the layers: the budgets a profile breaks.

pub mod budget;
