//! Which datagrams the impairments apply to: a direction, a display filter (`--only`, decoded
//! by the pipeline as any capture is), and the schedule's windows that drop what is selected.

use std::net::SocketAddr;

use crate::display_filter::DisplayFilter;
use crate::message::NoFields;
use crate::pipeline::{Pipeline, RunEnd, Sink};
use crate::proto::profile::Profile;
use crate::samplegen::pcap::{udp_frame_into, Link};
use crate::session::event::{DatagramEvent, LooseFinding};

/// Client to server, or back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    Up = 0,
    Down = 1,
}

impl Dir {
    pub fn name(self) -> &'static str {
        match self {
            Dir::Up => "client to server",
            Dir::Down => "server to client",
        }
    }
}

/// `--direction`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Directions {
    Both,
    /// Client to server.
    Up,
    /// Server to client.
    Down,
}

/// A `--schedule` window, `START-END` in seconds since the proxy started: the selected
/// datagrams arriving in it are dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub start_ns: u64,
    pub end_ns: u64,
}

/// `10s-12s` (or `10-12`, seconds).
pub fn parse_window(text: &str) -> Result<Window, String> {
    let bad = || format!("`{text}` is not a window START-END, e.g. 10s-12s");
    let (a, b) = text.split_once('-').ok_or_else(bad)?;
    let secs = |t: &str| {
        let t = t.trim();
        let t = t.strip_suffix('s').unwrap_or(t);
        match t.parse::<f64>() {
            Ok(v) if v.is_finite() && (0.0..1e6).contains(&v) => Ok((v * 1e9) as u64),
            _ => Err(bad()),
        }
    };
    let (start_ns, end_ns) = (secs(a)?, secs(b)?);
    if end_ns <= start_ns {
        return Err(bad());
    }
    Ok(Window { start_ns, end_ns })
}

/// The sink that only notes whether the display filter passed the datagram just decoded.
#[derive(Default)]
struct Hit {
    fields: NoFields,
    passed: bool,
}

impl Sink for Hit {
    type Fields = NoFields;
    fn fields(&mut self) -> &mut NoFields {
        &mut self.fields
    }
    fn datagram(&mut self, _: &DatagramEvent<'_>) {
        self.passed = true;
    }
    fn loose(&mut self, _: &LooseFinding) {}
    fn end(&mut self, _: &RunEnd<'_>) {}
}

/// The rules; see the module doc.
pub struct Selector {
    directions: Directions,
    only: Option<(Pipeline, Hit)>,
    pub windows: Vec<Window>,
    frames: u64,
    /// The frame `--only` decodes, reused.
    frame: Vec<u8>,
}

impl Selector {
    pub fn new(
        directions: Directions,
        only: Option<DisplayFilter>,
        profile: Profile,
        windows: Vec<Window>,
    ) -> Selector {
        let only = only.map(|f| {
            let pipeline = Pipeline::new(profile, None).with_filter(Some(f));
            (pipeline, Hit::default())
        });
        Selector {
            directions,
            only,
            windows,
            frames: 0,
            frame: Vec::new(),
        }
    }

    /// Whether the impairments apply to this datagram, going `dir` between `client` and
    /// `server` at `ts_ns` (since the epoch).
    pub fn selects(
        &mut self,
        dir: Dir,
        client: SocketAddr,
        server: SocketAddr,
        ts_ns: u64,
        payload: &[u8],
    ) -> bool {
        let wanted = match self.directions {
            Directions::Both => true,
            Directions::Up => dir == Dir::Up,
            Directions::Down => dir == Dir::Down,
        };
        let Some((pipeline, hit)) = self.only.as_mut().filter(|_| wanted) else {
            return wanted;
        };
        let (from, to) = match dir {
            Dir::Up => (client, server),
            Dir::Down => (server, client),
        };
        if udp_frame_into(Link::Ethernet, from, to, payload, &mut self.frame).is_err() {
            return false;
        }
        let data = &self.frame;
        self.frames += 1;
        let frame = crate::capture::Frame {
            number: self.frames,
            ts_nanos: ts_ns as i64,
            link_type: crate::capture::LinkType::ETHERNET,
            data,
            orig_len: data.len() as u32,
            file_offset: 0,
        };
        hit.passed = false;
        pipeline.frame(&frame, hit);
        hit.passed
    }

    /// Whether a selected datagram arriving `since_start_ns` after the start falls in a window.
    pub fn scheduled_drop(&self, since_start_ns: u64) -> bool {
        self.windows
            .iter()
            .any(|w| (w.start_ns..w.end_ns).contains(&since_start_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::registry::Registry;
    use crate::samplegen::rtype::RtypeBuilder;

    #[test]
    fn windows() {
        assert_eq!(
            parse_window("10s-12s"),
            Ok(Window {
                start_ns: 10_000_000_000,
                end_ns: 12_000_000_000
            })
        );
        assert!(parse_window("12-10").is_err() && parse_window("x").is_err());
    }

    #[test]
    fn only_selects_by_the_decoded_message() {
        let profile = Profile::document();
        let filter =
            DisplayFilter::compile("rtype.msg_type == 0x10", &Registry::new(&profile)).unwrap();
        let mut s = Selector::new(Directions::Both, Some(filter), profile, vec![]);
        let (c, srv) = (
            "127.0.0.1:40000".parse().unwrap(),
            "127.0.0.1:4242".parse().unwrap(),
        );
        let dgram = |t: u8| RtypeBuilder::new(1, t).build(&[]).unwrap();
        assert!(s.selects(Dir::Down, c, srv, 1, &dgram(0x10)));
        assert!(!s.selects(Dir::Down, c, srv, 2, &dgram(0x12)));
        let mut up = Selector::new(Directions::Up, None, Profile::document(), vec![]);
        assert!(up.selects(Dir::Up, c, srv, 1, b"x") && !up.selects(Dir::Down, c, srv, 1, b"x"));
    }
}
