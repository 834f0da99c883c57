//! Live capture on a Linux interface: an `AF_PACKET` socket through `libc`, no libpcap at build
//! or run time.
//!
//! - [`LiveCapture::open`] binds a packet socket to one interface (root or `CAP_NET_RAW`);
//! - [`LiveCapture::next_frame`] hands out the next frame as a [`Frame`](super::Frame) borrowed from one
//!   receive buffer that is reused for every packet (no allocation per packet), with the kernel's
//!   nanosecond receive time;
//! - [`LiveCapture::stats`] reads the kernel's counters (`PACKET_STATISTICS`): packets seen and
//!   dropped because the socket's queue was full;
//! - [`interfaces`] lists the interfaces.
//!
//! Ethernet and loopback interfaces give Ethernet frames ([`LinkType::ETHERNET`]); every other
//! kind gives Linux cooked frames ([`LinkType::LINUX_SLL`]), whose 16-byte header is built here.
//! On loopback every packet passes twice (sent, then received): only the received copy is kept,
//! and the kernel is asked not to queue the sent ones at all (`PACKET_IGNORE_OUTGOING`, Linux
//! 4.20): else its drop counter also counts the sent copies it drops, twice the real loss.

use std::fmt;
use std::io;

use super::linktype::LinkType;
use super::reader::{CaptureFormat, CaptureInfo};
use super::writer::{Precision, DEFAULT_SNAPLEN};

/// Bytes of each packet kept (the rest is counted in `orig_len`): every frame whole, even on
/// loopback (MTU 65536).
pub const SNAPLEN: u32 = DEFAULT_SNAPLEN;
/// Receive queue asked of the kernel, so bursts are not dropped while the decoder catches up.
const RECEIVE_BUFFER: i32 = 8 * 1024 * 1024;
/// Linux cooked header (LINKTYPE_LINUX_SLL) built in front of non-Ethernet packets.
const SLL_HEADER: usize = 16;

/// Why a live capture could not start.
#[derive(Debug)]
pub enum LiveError {
    /// No interface has this name.
    NoSuchInterface { interface: String },
    /// The socket was refused: not root and no `CAP_NET_RAW`.
    Permission {
        interface: String,
        call: &'static str,
        source: io::Error,
    },
    /// Any other failure of a system call.
    Io {
        interface: String,
        call: &'static str,
        source: io::Error,
    },
    /// Not Linux: no `AF_PACKET`.
    Unsupported,
}

/// `Operation not permitted`, without the ` (os error 1)` that `io::Error` adds.
fn os_text(e: &io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" (os error ") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

impl fmt::Display for LiveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LiveError::NoSuchInterface { interface } => {
                write!(
                    f,
                    "no interface named `{interface}` (`rtype-inspect interfaces` lists them)"
                )
            }
            LiveError::Permission {
                interface,
                call,
                source,
            } => {
                write!(
                    f,
                    "live capture on {interface} needs root or CAP_NET_RAW ({call}: {})",
                    os_text(source)
                )
            }
            LiveError::Io {
                interface,
                call,
                source,
            } => {
                write!(
                    f,
                    "live capture on {interface}: {call}: {}",
                    os_text(source)
                )
            }
            LiveError::Unsupported => f.write_str("live capture needs Linux (AF_PACKET sockets)"),
        }
    }
}

impl std::error::Error for LiveError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LiveError::Permission { source, .. } | LiveError::Io { source, .. } => Some(source),
            LiveError::NoSuchInterface { .. } | LiveError::Unsupported => None,
        }
    }
}

/// The kernel's counters for the socket since it was opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelStats {
    /// Packets the socket saw (on loopback, the sent copies too when the kernel predates 4.20).
    pub received: u64,
    /// Packets dropped because the receive queue was full (likewise).
    pub dropped: u64,
}

/// `PACKET_IGNORE_OUTGOING` (linux/if_packet.h; not in the libc crate): the socket is not handed
/// the packets the host sends.
#[cfg(target_os = "linux")]
const PACKET_IGNORE_OUTGOING: i32 = 23;

/// A network interface, as [`interfaces`] lists it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Interface {
    pub name: String,
    pub index: u32,
    pub up: bool,
    pub running: bool,
    pub loopback: bool,
    /// The link type a live capture on it records (None when the kernel did not say).
    pub link_type: Option<&'static str>,
    /// Addresses with their prefix length, as `ADDR/PREFIX`.
    pub addresses: Vec<String>,
}

/// The link type a capture on an interface of this hardware type (ARPHRD_) records.
fn link_type_of(hatype: u16) -> LinkType {
    match hatype {
        1 | 772 => LinkType::ETHERNET, // ARPHRD_ETHER, ARPHRD_LOOPBACK
        _ => LinkType::LINUX_SLL,
    }
}

/// What a live capture's frames look like to the rest of the pipeline: the pcap that `-w`
/// writes (nanosecond, little-endian), so a capture and its file read back alike.
pub fn capture_info(link_type: LinkType) -> CaptureInfo {
    CaptureInfo {
        format: CaptureFormat::Pcap,
        gzip: false,
        nanosecond: true,
        big_endian: false,
        link_types: vec![link_type],
    }
}

/// The timestamp precision of a live capture's frames (and so of its `-w` file).
pub const PRECISION: Precision = Precision::Nano;

#[cfg(target_os = "linux")]
pub use linux::{interfaces, LiveCapture};

#[cfg(not(target_os = "linux"))]
pub use other::{interfaces, LiveCapture};

#[cfg(target_os = "linux")]
mod linux {
    use std::ffi::CString;
    use std::io;
    use std::mem;
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::time::Duration;

    use super::{
        link_type_of, prefix_len, Interface, KernelStats, LinkType, LiveError,
        PACKET_IGNORE_OUTGOING, SLL_HEADER, SNAPLEN,
    };
    use crate::capture::Frame;

    /// A packet socket bound to one interface. See the module doc.
    pub struct LiveCapture {
        fd: OwnedFd,
        interface: String,
        ifindex: i32,
        link_type: LinkType,
        /// Non-Ethernet: `SOCK_DGRAM`, with a cooked header built in front of each packet.
        cooked: bool,
        /// Loopback: drop the sent copy of each packet.
        skip_outgoing: bool,
        /// The receive buffer, reused for every packet: the cooked header room, then the snaplen.
        buf: Vec<u8>,
        /// Control messages (the timestamp), 8-byte aligned.
        control: [u64; 16],
        frames: u64,
        stats: KernelStats,
        /// Whether the kernel counters could be read at all.
        stats_ok: bool,
    }

    fn last_error() -> io::Error {
        io::Error::last_os_error()
    }

    fn setsockopt<T>(fd: i32, level: i32, name: i32, value: &T) -> io::Result<()> {
        // SAFETY: `value` points to a live T of the size given.
        let r = unsafe {
            libc::setsockopt(
                fd,
                level,
                name,
                (value as *const T).cast(),
                mem::size_of::<T>() as libc::socklen_t,
            )
        };
        if r == 0 {
            Ok(())
        } else {
            Err(last_error())
        }
    }

    fn packet_socket(kind: i32) -> io::Result<OwnedFd> {
        // Protocol 0: the socket receives nothing until bind names the protocol and the
        // interface, so no packet of another interface slips in between.
        // SAFETY: plain system call; the descriptor is owned from here on.
        let fd = unsafe { libc::socket(libc::AF_PACKET, kind | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(last_error());
        }
        // SAFETY: `fd` is a fresh descriptor nobody else owns.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// The interface's hardware type (ARPHRD_), asked of any socket.
    fn hardware_type(fd: i32, name: &CString) -> io::Result<u16> {
        // SAFETY: ifreq is plain data; zero is a valid value.
        let mut req: libc::ifreq = unsafe { mem::zeroed() };
        for (dst, src) in req
            .ifr_name
            .iter_mut()
            .zip(name.as_bytes().iter().take(libc::IFNAMSIZ - 1))
        {
            *dst = *src as libc::c_char;
        }
        // SAFETY: SIOCGIFHWADDR fills `req`, which lives through the call.
        if unsafe { libc::ioctl(fd, libc::SIOCGIFHWADDR, &mut req) } < 0 {
            return Err(last_error());
        }
        // SAFETY: the kernel wrote the hwaddr member of the union.
        Ok(unsafe { req.ifr_ifru.ifru_hwaddr.sa_family })
    }

    fn permission(e: &io::Error) -> bool {
        matches!(e.raw_os_error(), Some(libc::EPERM) | Some(libc::EACCES))
    }

    impl LiveCapture {
        /// Opens a capture on `interface` (by name). Needs root or `CAP_NET_RAW`.
        pub fn open(interface: &str) -> Result<LiveCapture, LiveError> {
            let name = interface.to_string();
            let no_such = || LiveError::NoSuchInterface {
                interface: name.clone(),
            };
            let c_name = CString::new(interface).map_err(|_| no_such())?;
            // SAFETY: `c_name` is a valid C string.
            let ifindex = unsafe { libc::if_nametoindex(c_name.as_ptr()) };
            if ifindex == 0 || interface.len() >= libc::IFNAMSIZ {
                return Err(no_such());
            }
            let fail = |call: &'static str, source: io::Error| {
                if permission(&source) {
                    LiveError::Permission {
                        interface: name.clone(),
                        call,
                        source,
                    }
                } else {
                    LiveError::Io {
                        interface: name.clone(),
                        call,
                        source,
                    }
                }
            };
            let mut fd = packet_socket(libc::SOCK_RAW).map_err(|e| fail("socket", e))?;
            let hatype = hardware_type(fd.as_raw_fd(), &c_name)
                .map_err(|e| fail("ioctl SIOCGIFHWADDR", e))?;
            let link_type = link_type_of(hatype);
            let cooked = link_type == LinkType::LINUX_SLL;
            if cooked {
                fd = packet_socket(libc::SOCK_DGRAM).map_err(|e| fail("socket", e))?;
            }
            let raw = fd.as_raw_fd();
            // A big queue when allowed (root may pass rmem_max), else as big as the limit lets.
            if setsockopt(raw, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &RECEIVE_BUFFER).is_err() {
                let _ = setsockopt(raw, libc::SOL_SOCKET, libc::SO_RCVBUF, &RECEIVE_BUFFER);
            }
            // Loopback: the sent copy of each packet is not even queued (older kernels refuse
            // the option; the copies are then skipped below, and counted in the drops).
            let skip_outgoing = hatype == libc::ARPHRD_LOOPBACK;
            if skip_outgoing {
                let _ = setsockopt(raw, libc::SOL_PACKET, PACKET_IGNORE_OUTGOING, &1i32);
            }
            // The kernel's receive time, in nanoseconds, with each packet.
            setsockopt(raw, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, &1i32)
                .map_err(|e| fail("setsockopt SO_TIMESTAMPNS", e))?;
            // SAFETY: sockaddr_ll is plain data; zero is a valid value.
            let mut addr: libc::sockaddr_ll = unsafe { mem::zeroed() };
            addr.sll_family = libc::AF_PACKET as u16;
            addr.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
            addr.sll_ifindex = ifindex as i32;
            // SAFETY: `addr` is a sockaddr_ll of the size given.
            let bound = unsafe {
                libc::bind(
                    raw,
                    (&addr as *const libc::sockaddr_ll).cast(),
                    mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
                )
            };
            if bound < 0 {
                return Err(fail("bind", last_error()));
            }
            let mut capture = LiveCapture {
                fd,
                interface: name,
                ifindex: ifindex as i32,
                link_type,
                cooked,
                skip_outgoing,
                buf: vec![0; SLL_HEADER + SNAPLEN as usize],
                control: [0; 16],
                frames: 0,
                stats: KernelStats::default(),
                stats_ok: true,
            };
            // Start the kernel's counters from zero.
            capture.stats();
            capture.stats = KernelStats::default();
            Ok(capture)
        }

        pub fn interface(&self) -> &str {
            &self.interface
        }

        /// The link type of every frame: Ethernet or Linux cooked.
        pub fn link_type(&self) -> LinkType {
            self.link_type
        }

        /// Frames handed out so far.
        pub fn frames(&self) -> u64 {
            self.frames
        }

        /// Waits until a packet may be read, at most `timeout`. False on timeout or when a
        /// signal interrupted the wait.
        pub fn wait(&self, timeout: Duration) -> io::Result<bool> {
            let mut pfd = libc::pollfd {
                fd: self.fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
            // SAFETY: one pollfd, alive through the call.
            let r = unsafe { libc::poll(&mut pfd, 1, ms) };
            if r < 0 {
                let e = last_error();
                return if e.kind() == io::ErrorKind::Interrupted {
                    Ok(false)
                } else {
                    Err(e)
                };
            }
            Ok(r > 0)
        }

        /// The next frame, without waiting: None when none is queued (or a signal interrupted
        /// the read). Frames are numbered from 1 in the order they are handed out.
        pub fn next_frame(&mut self) -> io::Result<Option<Frame<'_>>> {
            let start = if self.cooked { SLL_HEADER } else { 0 };
            let (len, ts_nanos) = loop {
                // SAFETY: plain data; zero is a valid value.
                let mut from: libc::sockaddr_ll = unsafe { mem::zeroed() };
                let mut iov = libc::iovec {
                    iov_base: self.buf[start..].as_mut_ptr().cast(),
                    iov_len: self.buf.len() - start,
                };
                // SAFETY: plain data; zero is a valid value.
                let mut msg: libc::msghdr = unsafe { mem::zeroed() };
                msg.msg_name = (&mut from as *mut libc::sockaddr_ll).cast();
                msg.msg_namelen = mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
                msg.msg_iov = &mut iov;
                msg.msg_iovlen = 1;
                msg.msg_control = self.control.as_mut_ptr().cast();
                msg.msg_controllen = mem::size_of_val(&self.control) as _;
                // MSG_TRUNC: the length returned is the packet's, even when the buffer is shorter.
                // SAFETY: every pointer in `msg` points to live memory of the sizes given.
                let n = unsafe {
                    libc::recvmsg(
                        self.fd.as_raw_fd(),
                        &mut msg,
                        libc::MSG_TRUNC | libc::MSG_DONTWAIT,
                    )
                };
                if n < 0 {
                    let e = last_error();
                    return match e.kind() {
                        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
                        _ => Err(e),
                    };
                }
                if from.sll_ifindex != self.ifindex
                    || (self.skip_outgoing && from.sll_pkttype == libc::PACKET_OUTGOING)
                {
                    continue;
                }
                if self.cooked {
                    let h = &mut self.buf[..SLL_HEADER];
                    h[0..2].copy_from_slice(&u16::from(from.sll_pkttype).to_be_bytes());
                    h[2..4].copy_from_slice(&from.sll_hatype.to_be_bytes());
                    let halen = from.sll_halen.min(8);
                    h[4..6].copy_from_slice(&u16::from(halen).to_be_bytes());
                    h[6..14].fill(0);
                    h[6..6 + halen as usize].copy_from_slice(&from.sll_addr[..halen as usize]);
                    // Already in network order.
                    h[14..16].copy_from_slice(&from.sll_protocol.to_ne_bytes());
                }
                break (start + n as usize, timestamp(&msg));
            };
            self.frames += 1;
            let caplen = len.min(self.buf.len());
            Ok(Some(Frame {
                number: self.frames,
                ts_nanos,
                link_type: self.link_type,
                data: &self.buf[..caplen],
                orig_len: u32::try_from(len).unwrap_or(u32::MAX),
                file_offset: 0,
            }))
        }

        /// The kernel's counters since the capture was opened; None when it would not say.
        pub fn stats(&mut self) -> Option<KernelStats> {
            if !self.stats_ok {
                return None;
            }
            // SAFETY: plain data; zero is a valid value.
            let mut s: libc::tpacket_stats = unsafe { mem::zeroed() };
            let mut len = mem::size_of::<libc::tpacket_stats>() as libc::socklen_t;
            // SAFETY: `s` and `len` live through the call and have the sizes given.
            let r = unsafe {
                libc::getsockopt(
                    self.fd.as_raw_fd(),
                    libc::SOL_PACKET,
                    libc::PACKET_STATISTICS,
                    (&mut s as *mut libc::tpacket_stats).cast(),
                    &mut len,
                )
            };
            if r < 0 {
                self.stats_ok = false;
                return None;
            }
            // Reading the counters resets them: add them up.
            self.stats.received += u64::from(s.tp_packets);
            self.stats.dropped += u64::from(s.tp_drops);
            Some(self.stats)
        }
    }

    /// The packet's receive time from its control message, else now.
    fn timestamp(msg: &libc::msghdr) -> i64 {
        // SAFETY: `msg` was filled by recvmsg; the CMSG_ macros walk its control buffer within
        // msg_controllen.
        unsafe {
            let mut cmsg = libc::CMSG_FIRSTHDR(msg);
            while !cmsg.is_null() {
                let c = &*cmsg;
                if c.cmsg_level == libc::SOL_SOCKET && c.cmsg_type == libc::SCM_TIMESTAMPNS {
                    let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast());
                    return ts.tv_sec as i64 * 1_000_000_000 + ts.tv_nsec as i64;
                }
                cmsg = libc::CMSG_NXTHDR(msg, cmsg);
            }
        }
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
    }

    /// Every interface, by index: flags, the link type a capture would record, addresses.
    pub fn interfaces() -> io::Result<Vec<Interface>> {
        let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
        // SAFETY: getifaddrs fills `head`, freed below.
        if unsafe { libc::getifaddrs(&mut head) } < 0 {
            return Err(last_error());
        }
        let mut list: Vec<Interface> = Vec::new();
        let mut at = head;
        while !at.is_null() {
            // SAFETY: a node of the list getifaddrs returned, not yet freed.
            let ifa = unsafe { &*at };
            at = ifa.ifa_next;
            if ifa.ifa_name.is_null() {
                continue;
            }
            // SAFETY: a NUL-terminated name.
            let name = unsafe { std::ffi::CStr::from_ptr(ifa.ifa_name) }
                .to_string_lossy()
                .into_owned();
            let flags = ifa.ifa_flags as i32;
            let i = match list.iter().position(|i| i.name == name) {
                Some(i) => i,
                None => {
                    // SAFETY: a valid C string.
                    let index = unsafe { libc::if_nametoindex(ifa.ifa_name) };
                    list.push(Interface {
                        name,
                        index,
                        up: flags & libc::IFF_UP != 0,
                        running: flags & libc::IFF_RUNNING != 0,
                        loopback: flags & libc::IFF_LOOPBACK != 0,
                        link_type: None,
                        addresses: Vec::new(),
                    });
                    list.len() - 1
                }
            };
            if ifa.ifa_addr.is_null() {
                continue;
            }
            // SAFETY: ifa_addr points to a sockaddr of the family it names (and so do the mask's).
            unsafe {
                match i32::from((*ifa.ifa_addr).sa_family) {
                    libc::AF_INET => {
                        let a = &*(ifa.ifa_addr as *const libc::sockaddr_in);
                        let ip = Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
                        let prefix = (!ifa.ifa_netmask.is_null()).then(|| {
                            prefix_len(
                                &(*(ifa.ifa_netmask as *const libc::sockaddr_in))
                                    .sin_addr
                                    .s_addr
                                    .to_ne_bytes(),
                            )
                        });
                        list[i].addresses.push(shown(IpAddr::V4(ip), prefix));
                    }
                    libc::AF_INET6 => {
                        let a = &*(ifa.ifa_addr as *const libc::sockaddr_in6);
                        let ip = Ipv6Addr::from(a.sin6_addr.s6_addr);
                        let prefix = (!ifa.ifa_netmask.is_null()).then(|| {
                            prefix_len(
                                &(*(ifa.ifa_netmask as *const libc::sockaddr_in6))
                                    .sin6_addr
                                    .s6_addr,
                            )
                        });
                        list[i].addresses.push(shown(IpAddr::V6(ip), prefix));
                    }
                    libc::AF_PACKET => {
                        let a = &*(ifa.ifa_addr as *const libc::sockaddr_ll);
                        list[i].link_type = Some(link_type_of(a.sll_hatype).name());
                    }
                    _ => {}
                }
            }
        }
        // SAFETY: the list from getifaddrs, freed once; nothing borrows from it any more.
        unsafe { libc::freeifaddrs(head) };
        list.sort_by_key(|i| i.index);
        Ok(list)
    }

    fn shown(ip: IpAddr, prefix: Option<u32>) -> String {
        match prefix {
            Some(p) => format!("{ip}/{p}"),
            None => ip.to_string(),
        }
    }

    const RECEIVE_BUFFER: i32 = super::RECEIVE_BUFFER;
}

#[cfg(not(target_os = "linux"))]
mod other {
    use std::io;
    use std::time::Duration;

    use super::{Interface, KernelStats, LinkType, LiveError};
    use crate::capture::Frame;

    /// Live capture is Linux only: opening always fails.
    pub struct LiveCapture(());

    impl LiveCapture {
        pub fn open(_interface: &str) -> Result<LiveCapture, LiveError> {
            Err(LiveError::Unsupported)
        }
        pub fn interface(&self) -> &str {
            ""
        }
        pub fn link_type(&self) -> LinkType {
            LinkType::UNKNOWN
        }
        pub fn frames(&self) -> u64 {
            0
        }
        pub fn wait(&self, _timeout: Duration) -> io::Result<bool> {
            Ok(false)
        }
        pub fn next_frame(&mut self) -> io::Result<Option<Frame<'_>>> {
            Ok(None)
        }
        pub fn stats(&mut self) -> Option<KernelStats> {
            None
        }
    }

    pub fn interfaces() -> io::Result<Vec<Interface>> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            LiveError::Unsupported.to_string(),
        ))
    }
}

/// Leading one bits of a netmask.
fn prefix_len(mask: &[u8]) -> u32 {
    let mut n = 0;
    for b in mask {
        n += b.leading_ones();
        if *b != 0xff {
            break;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes() {
        assert_eq!(prefix_len(&[255, 0, 0, 0]), 8);
        assert_eq!(prefix_len(&[255, 255, 255, 0]), 24);
        assert_eq!(prefix_len(&[255, 255, 240, 0]), 20);
        assert_eq!(prefix_len(&[0xff; 16]), 128);
        assert_eq!(prefix_len(&[0; 4]), 0);
    }

    #[test]
    fn link_types_by_hardware() {
        assert_eq!(link_type_of(1), LinkType::ETHERNET);
        assert_eq!(link_type_of(772), LinkType::ETHERNET);
        assert_eq!(link_type_of(0xfffe), LinkType::LINUX_SLL);
        assert_eq!(link_type_of(65534), LinkType::LINUX_SLL);
    }

    #[test]
    fn errors_are_one_line() {
        let e = LiveError::Permission {
            interface: "lo".into(),
            call: "socket",
            source: io::Error::from_raw_os_error(1),
        };
        assert_eq!(
            e.to_string(),
            "live capture on lo needs root or CAP_NET_RAW (socket: Operation not permitted)"
        );
        let e = LiveError::NoSuchInterface {
            interface: "nope0".into(),
        };
        assert!(e.to_string().starts_with("no interface named `nope0`"));
    }

    #[test]
    fn unknown_interfaces_are_refused_before_any_socket() {
        for name in ["rtype-nope0", "with\0nul", ""] {
            let err = LiveCapture::open(name).err().expect("no such interface");
            if cfg!(target_os = "linux") {
                assert!(matches!(err, LiveError::NoSuchInterface { .. }), "{err}");
            }
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn loopback_is_listed() {
        let list = interfaces().unwrap();
        let lo = list
            .iter()
            .find(|i| i.loopback)
            .expect("a loopback interface");
        assert!(lo.index > 0);
        assert_eq!(lo.link_type, Some("ethernet"));
    }
}
