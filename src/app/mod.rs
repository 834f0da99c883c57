//! Running a command, below the command line and above the pipeline: the configuration file, the
//! reading options and the read loop, where text goes (terminal or pipe), and output files written
//! whole or not at all. Reports use this layer; only `cli` parses arguments.

pub mod commands;
pub mod config;
pub mod inputs;
pub mod output;
pub mod progress;
pub mod read;
pub mod term;

pub use config::Config;
pub use output::{write_file, write_stdout, written, Format, OutputFile};
pub use read::{read_capture, ReadOpts, Reading};
pub use term::{ColorChoice, Term};
