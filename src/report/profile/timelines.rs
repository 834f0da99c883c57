//! The entities a profile follows on timelines: a few entities' sampled updates, spawns and
//! destroys, bounded however long they live.

use super::account::{MAX_TIMELINES, MAX_TIMELINE_SAMPLES};

/// One entity's sampled updates (see [`super::SAMPLE_EVERY_NANOS`]), for the report's timelines.
#[derive(Clone, Debug)]
pub struct Timeline {
    pub id: u32,
    pub type_code: u32,
    /// Capture time and position (NaN when the update carried none).
    pub samples: Vec<(i64, f32, f32)>,
    /// Every how many sampled updates one is kept (doubles when the samples are full).
    pub stride: u64,
    /// Sampled updates.
    pub updates: u64,
    pub spawns: Vec<i64>,
    pub destroys: Vec<i64>,
}

/// The entities followed on timelines, with a quick test for ids that are not.
#[derive(Clone, Debug, Default)]
pub struct Timelines {
    pub list: Vec<Timeline>,
    /// Bit `id % 64` set for each id followed.
    filter: u64,
}

impl Timelines {
    fn find(&mut self, id: u32) -> Option<&mut Timeline> {
        if self.filter & (1 << (id % 64)) == 0 {
            return None;
        }
        self.list.iter_mut().find(|t| t.id == id)
    }

    /// An update of entity `id` at `ts` (a new entity is followed while there is room).
    pub fn update(&mut self, id: u32, type_code: u32, ts: i64, x: Option<f64>, y: Option<f64>) {
        let room = self.list.len() < MAX_TIMELINES;
        let t = match self.find(id) {
            Some(t) => t,
            None if room => {
                self.filter |= 1 << (id % 64);
                self.list.push(Timeline {
                    id,
                    type_code,
                    samples: Vec::new(),
                    stride: 1,
                    updates: 0,
                    spawns: Vec::new(),
                    destroys: Vec::new(),
                });
                self.list.last_mut().expect("just pushed")
            }
            None => return,
        };
        t.type_code = type_code;
        if t.updates % t.stride == 0 {
            if t.samples.len() >= MAX_TIMELINE_SAMPLES {
                let mut keep = false;
                t.samples.retain(|_| {
                    keep = !keep;
                    keep
                });
                t.stride *= 2;
            }
            if t.updates % t.stride == 0 {
                let f = |v: Option<f64>| v.map_or(f32::NAN, |v| v as f32);
                t.samples.push((ts, f(x), f(y)));
            }
        }
        t.updates += 1;
    }

    /// A spawn or destroy of an entity followed (at most [`MAX_TIMELINES`] of each are kept).
    pub fn lifecycle(&mut self, id: u32, spawn: bool, ts: i64) {
        if let Some(t) = self.find(id) {
            let list = if spawn {
                &mut t.spawns
            } else {
                &mut t.destroys
            };
            if list.len() < MAX_TIMELINES {
                list.push(ts);
            }
        }
    }
}
