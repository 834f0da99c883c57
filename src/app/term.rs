//! Where text output goes: a terminal gets colour and lines cut or wrapped to its width; a pipe
//! or a file gets whole lines and no colour, so `grep` sees everything.

use std::io::IsTerminal;

/// `--color`: when to colour text output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// On a terminal, unless NO_COLOR is set or TERM is dumb.
    #[default]
    Auto,
    Always,
    Never,
}

/// How to lay text out for standard output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Term {
    pub color: bool,
    /// The terminal's width in columns; `None` on a pipe or a file: print whole lines.
    pub width: Option<usize>,
}

/// Used when a terminal does not say how wide it is.
const DEFAULT_WIDTH: usize = 100;

impl Term {
    /// Standard output as it is now.
    pub fn stdout(choice: ColorChoice) -> Term {
        Term::of(std::io::stdout().is_terminal(), libc::STDOUT_FILENO, choice)
    }

    /// Standard error as it is now, for what is drawn there (the proxy's live view).
    pub fn stderr(choice: ColorChoice) -> Term {
        Term::of(std::io::stderr().is_terminal(), libc::STDERR_FILENO, choice)
    }

    /// The output on file descriptor `fd`, a terminal when `tty`.
    fn of(tty: bool, fd: libc::c_int, choice: ColorChoice) -> Term {
        let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        let dumb = env("TERM").is_some_and(|t| t == "dumb");
        let color = match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => tty && env("NO_COLOR").is_none() && !dumb,
        };
        Term {
            color,
            width: tty.then(|| terminal_width(fd).unwrap_or(DEFAULT_WIDTH)),
        }
    }

    /// A pipe: whole lines, no colour.
    pub const fn pipe() -> Term {
        Term {
            color: false,
            width: None,
        }
    }
}

/// The width of the terminal on `fd`, from the kernel, else from `$COLUMNS`.
fn terminal_width(fd: libc::c_int) -> Option<usize> {
    #[cfg(unix)]
    {
        // SAFETY: TIOCGWINSZ writes a winsize into the zeroed struct we own; nothing else.
        let mut size: libc::winsize = unsafe { std::mem::zeroed() };
        let ok = unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut size) } == 0;
        if ok && size.ws_col > 0 {
            return Some(usize::from(size.ws_col));
        }
    }
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .filter(|c| *c > 0)
}
