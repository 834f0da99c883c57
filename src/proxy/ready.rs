//! Which of the relay's sockets have datagrams waiting. On Linux, an epoll set: each socket is
//! registered once, and a wake-up costs the same with one client or hundreds. poll hands the
//! kernel every descriptor on every call, which was a third of the relay's system time with 16
//! clients and a delay, when each delayed datagram is sent from a wake-up of its own. Elsewhere,
//! poll.
//!
//! A socket's token is its place in the order of [`Ready::add`]: the relay adds its listening
//! socket first, then each client's upstream socket.

use std::io;
use std::os::fd::RawFd;

pub struct Ready {
    #[cfg(target_os = "linux")]
    epoll: std::os::fd::OwnedFd,
    /// The last wait's events (as many as sockets added: one wait reports every ready one).
    #[cfg(target_os = "linux")]
    events: Vec<libc::epoll_event>,
    #[cfg(not(target_os = "linux"))]
    fds: Vec<libc::pollfd>,
    /// The tokens the last wait found ready.
    ready: Vec<usize>,
}

impl Ready {
    #[cfg(target_os = "linux")]
    pub fn new() -> io::Result<Ready> {
        use std::os::fd::FromRawFd;
        // SAFETY: epoll_create1 takes no pointer; a non-negative result is a new descriptor
        // that the OwnedFd then owns and closes.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Ready {
            epoll: unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) },
            events: Vec::new(),
            ready: Vec::new(),
        })
    }

    #[cfg(not(target_os = "linux"))]
    pub fn new() -> io::Result<Ready> {
        Ok(Ready {
            fds: Vec::new(),
            ready: Vec::new(),
        })
    }

    /// Watches `fd` for datagrams to read; its token is the number of sockets added before it.
    #[cfg(target_os = "linux")]
    pub fn add(&mut self, fd: RawFd) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        let mut event = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: self.events.len() as u64,
        };
        // SAFETY: event is a valid epoll_event for the call's duration.
        let done =
            unsafe { libc::epoll_ctl(self.epoll.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut event) };
        if done < 0 {
            return Err(io::Error::last_os_error());
        }
        self.events.push(libc::epoll_event { events: 0, u64: 0 });
        Ok(())
    }

    #[cfg(not(target_os = "linux"))]
    pub fn add(&mut self, fd: RawFd) -> io::Result<()> {
        self.fds.push(libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        });
        Ok(())
    }

    /// Waits at most `ms` milliseconds for a socket to be readable; returns how many are, whose
    /// tokens [`Ready::token`] gives. An interrupted wait finds none.
    #[cfg(target_os = "linux")]
    pub fn wait(&mut self, ms: libc::c_int) -> io::Result<usize> {
        use std::os::fd::AsRawFd;
        self.ready.clear();
        // SAFETY: events holds events.len() epoll_event structures for the kernel to fill.
        let n = unsafe {
            libc::epoll_wait(
                self.epoll.as_raw_fd(),
                self.events.as_mut_ptr(),
                self.events.len().max(1) as libc::c_int,
                ms,
            )
        };
        let tokens = self.events[..found(n)?].iter().map(|e| e.u64 as usize);
        self.ready.extend(tokens);
        Ok(self.ready.len())
    }

    #[cfg(not(target_os = "linux"))]
    pub fn wait(&mut self, ms: libc::c_int) -> io::Result<usize> {
        self.ready.clear();
        // SAFETY: fds is a valid array of fds.len() pollfd structures.
        let n = unsafe { libc::poll(self.fds.as_mut_ptr(), self.fds.len() as libc::nfds_t, ms) };
        found(n)?;
        for (token, fd) in self.fds.iter_mut().enumerate() {
            if std::mem::take(&mut fd.revents) != 0 {
                self.ready.push(token);
            }
        }
        Ok(self.ready.len())
    }

    /// The token of the `i`-th socket the last wait found ready.
    pub fn token(&self, i: usize) -> usize {
        self.ready[i]
    }
}

/// How many sockets a wait's result `n` found ready: none if a signal interrupted it.
fn found(n: libc::c_int) -> io::Result<usize> {
    match usize::try_from(n) {
        Ok(n) => Ok(n),
        Err(_) => match io::Error::last_os_error() {
            e if e.kind() == io::ErrorKind::Interrupted => Ok(0),
            e => Err(e),
        },
    }
}
