//! The command line: its arguments (clap), and which function runs each command.
//!
//! Exit codes: 0 when the files were read (and, for `check`, nothing reached `--fail-on`),
//! 1 when `check` found something, 2 when a file cannot be read or the arguments are wrong.

pub mod args;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::app::commands::{self, CatalogFormat};
use crate::app::{write_stdout, ColorChoice, Format, Term};
use crate::proto::profile::Profile;
use crate::report;
use args::{
    CheckArgs, DiffArgs, EntityArgs, ExportArgs, LiveArgs, PacketsArgs, ProfileArgs, ReportArgs,
    SummaryArgs, WorldArgs,
};

/// `rtype-inspect FILE` is `rtype-inspect summary FILE`: the summary's arguments are accepted at
/// the top level, options anywhere; before a command's name, they are the command's.
#[derive(Parser)]
#[command(
    name = "rtype-inspect",
    version,
    about = "Inspect R-Type UDP game traffic in pcap and pcapng captures",
    arg_required_else_help = true,
    override_usage = "rtype-inspect [OPTIONS] [FILE]...\n       rtype-inspect [--color WHEN] <COMMAND> ...",
    after_help = "Without a command, rtype-inspect summarises the capture (the summary command)."
)]
pub struct Cli {
    /// When to colour text: auto (on a terminal, unless NO_COLOR is set or TERM is dumb),
    /// always, never.
    #[arg(long, value_enum, global = true, default_value = "auto")]
    color: ColorChoice,
    /// A dialect description (YAML, docs/dialect-format.md) to recognise and judge besides the
    /// bundled dialects, in every command; repeatable (also `dialects = [...]` in the
    /// configuration).
    #[arg(long = "dialect", value_name = "FILE", global = true)]
    dialects: Vec<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    summary: SummaryArgs,
}

/// Display-filter examples for the commands' help: a macro, for `concat!` to add them to
/// [`EXPORT_HELP`].
macro_rules! filter_examples {
    () => {
        "\
Display filters (-Y), as in Wireshark, on the dissector's field names (rtype-inspect fields):
  -Y 'rtype.snapshot.entity.entity_type == 3'             snapshots holding entities of type 3
  -Y 'rtype.snapshot.entity_count > 50 || rtype.reassembled.entity_count > 50'
                                                          the big snapshots (chunked ones too)
  -Y 'ip.src == 10.0.0.2 && rtype.input.input_flags.fire == 1'
                                                          one client's inputs with fire pressed
  -Y '_ws.expert.severity == error'                       everything with an error
  -Y 'rtype.msg_type in {SERVER_SNAPSHOT, SERVER_SNAPSHOT_CHUNK} && frame.time_relative > 10'"
    };
}

/// Display-filter examples for the commands' help.
const FILTER_EXAMPLES: &str = filter_examples!();

/// `export`'s help: the Parquet dataset, then the display-filter examples.
const EXPORT_HELP: &str = concat!(
    "Parquet (docs/parquet.md): rtype-inspect export captures/ --format parquet -o dataset/
  writes dataset/<table>/capture=<NAME>/part-0.parquet for every capture found, NAME being its
  path below the directory argument (Hive's partitions: DuckDB, Spark, Trino, ClickHouse and
  pandas read dataset/<table> as one table with a `capture` column).

",
    filter_examples!()
);

/// The `dialect` commands.
#[derive(Subcommand)]
enum DialectCommand {
    /// Decode a capture with a description and list the datagrams it fails to parse: frame,
    /// rule, byte offset, field, what was expected and what was found (exit 1 on an error,
    /// 2 when no datagram of the dialect is found).
    Check {
        /// The description (YAML).
        description: PathBuf,
        /// The capture (pcap or pcapng).
        capture: PathBuf,
        /// Output form: text (a line per finding and a summary), or json (one document).
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// One line per datagram of the described dialect; -V for every field; json: one object
    /// per datagram, one per line.
    Packets {
        /// The description (YAML).
        description: PathBuf,
        /// The capture (pcap or pcapng).
        capture: PathBuf,
        /// Print every decoded field, with its filter name, offset and length.
        #[arg(short = 'V', long)]
        verbose: bool,
        /// Output form: text (a line per datagram), or json (a record per datagram, one per line).
        #[arg(long, value_enum, default_value = "text", conflicts_with = "verbose")]
        format: Format,
    },
    /// List the display-filter fields a description defines: name, type, label.
    Fields {
        /// The description (YAML).
        description: PathBuf,
        /// Output form: text (tshark -G fields' lines), or json (one document).
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Write the layout part as Kaitai Struct (.ksy), for Kaitai's Web IDE.
    Ksy {
        /// The description (YAML).
        description: PathBuf,
        /// Output file, - for standard output [default: -].
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Write a Wireshark Lua dissector of the described dialect (tshark -X lua_script:FILE).
    Dissector {
        /// The description (YAML).
        description: PathBuf,
        /// Output file, - for standard output [default: -].
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Write a commented starting description.
    New {
        /// Output file, - for standard output [default: -].
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

/// Runs a `dialect` command.
fn dialect(command: DialectCommand) -> Result<ExitCode, String> {
    use report::dialect as d;
    match command {
        DialectCommand::Check {
            description,
            capture,
            format,
        } => d::check(&description, &capture, format == Format::Json),
        DialectCommand::Packets {
            description,
            capture,
            verbose,
            format,
        } => d::packets(&description, &capture, verbose, format == Format::Json),
        DialectCommand::Fields {
            description,
            format,
        } => d::fields(&description, format == Format::Json),
        DialectCommand::Ksy {
            description,
            output,
        } => d::ksy(&description, output.as_deref()),
        DialectCommand::Dissector {
            description,
            output,
        } => commands::dialect_dissector(&description, output.as_deref()),
        DialectCommand::New { output } => {
            d::write_out(output.as_deref(), crate::describe::TEMPLATE)
        }
    }
}

#[derive(Subcommand)]
enum Command {
    /// Summarise a capture: conversations, message counts, violations (the default command).
    #[command(after_help = FILTER_EXAMPLES)]
    Summary(SummaryArgs),
    /// One line per datagram; -V for the decoded tree, -x for a hex dump.
    #[command(after_help = FILTER_EXAMPLES)]
    Packets(PacketsArgs),
    /// Export the JSON timeline (NDJSON by default), or a Parquet dataset of many captures.
    #[command(after_help = EXPORT_HELP)]
    Export(ExportArgs),
    /// Per-conversation session analysis: handshake, rates, round trips, loss, LevelInit.
    #[command(after_help = FILTER_EXAMPLES)]
    Stats(SummaryArgs),
    /// Follow one entity through each client's view: its spawns, every update with the fields
    /// that changed and the gap since the one before, its destroys, what came after, and the
    /// lifecycle findings that name it.
    #[command(after_help = FILTER_EXAMPLES)]
    Entity(EntityArgs),
    /// The world each client held at a time: every entity with its type, position, velocity,
    /// health and the age of its last update; and where two clients of one server were sent
    /// other values at one tick.
    World(WorldArgs),
    /// Judge captures for CI: exit 0 clean, 1 when a finding reaches --fail-on, 2 on errors.
    #[command(after_help = FILTER_EXAMPLES)]
    Check(CheckArgs),
    /// Where the bytes go: bandwidth by message type, snapshot bytes by entity type and field,
    /// entity update rates, time buckets, distributions, chunking.
    Profile(ProfileArgs),
    /// Compare two captures (or saved `profile --format json` documents): message mix, bytes,
    /// rates, percentiles, findings; --fail-above PERCENT makes it a CI gate.
    Diff(DiffArgs),
    /// One self-contained HTML page of graphs (a tab per capture): IO graphs, snapshot gaps,
    /// round trips, bandwidth by entity type and field, budgets, the world view; `--format
    /// svg`: the main graphs and world views as SVG files.
    Report(ReportArgs),
    /// Print the protocol reference (every message and field) generated from the description.
    Protocol,
    /// List the Parquet export's tables and columns (Markdown: docs/parquet.md's generated part).
    Tables {
        /// Snapshot profile whose mask-bit fields are entity columns (a bundled name or a TOML file).
        #[arg(long, value_name = "NAME|FILE")]
        profile: Option<PathBuf>,
    },
    /// List every display-filter field (like tshark -G fields): name, type, label.
    Fields {
        /// Output form: text (tshark -G fields' lines), or json (one document).
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        /// Also list each field's value strings (V lines).
        #[arg(long)]
        values: bool,
        /// Snapshot profile whose mask-bit fields to list (a bundled name or a TOML file).
        #[arg(long, value_name = "NAME|FILE")]
        profile: Option<PathBuf>,
    },
    /// List the catalog of violations.
    Violations {
        /// Output form: text (a table), json (one document), or markdown (docs/violations.md's table).
        #[arg(long, value_enum, default_value = "text")]
        format: CatalogFormat,
    },
    /// Write the Wireshark Lua dissector generated from the protocol description.
    Dissector {
        /// Output file, - for standard output [default: -].
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Snapshot profile to build in as the preference's default (a bundled name, document,
        /// or a TOML file) [default: auto: the document's, or per conversation the bundled
        /// profile its snapshots fit].
        #[arg(long, value_name = "NAME|FILE")]
        profile: Option<PathBuf>,
    },
    /// Capture live on a Linux interface (root or CAP_NET_RAW): the packet list as datagrams
    /// arrive, then the summary on Ctrl-C, --duration or --count.
    #[command(after_help = FILTER_EXAMPLES)]
    Live(LiveArgs),
    /// Relay UDP between game clients and a server, impairing it on demand (delay, jitter,
    /// loss, burst loss, duplication, reordering, rate, MTU; by direction, display filter and
    /// schedule; reproducible with --seed); -w records both sides, annotated. Each client's
    /// figures as delivered (snapshot rate, loss, RTT, gaps, findings) are shown live on a
    /// terminal and in the summary.
    Proxy(crate::proxy::ProxyArgs),
    /// Re-send the client side of a capture to a live server with the original timing, each
    /// client from its own socket; report what the server answered (-w records it).
    Replay(crate::proxy::ReplayArgs),
    /// List the network interfaces live capture can use.
    Interfaces {
        /// Output form: text (a table), or json (one document).
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Print a shell's completion script (e.g. rtype-inspect completions bash >
    /// /etc/bash_completion.d/rtype-inspect).
    Completions {
        /// The shell: bash, zsh, fish, powershell or elvish.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page, roff (docs/rtype-inspect.1; man -l docs/rtype-inspect.1).
    Man,
    /// Your own protocol, described in a YAML file (docs/dialect-format.md): check it against
    /// a capture, list its datagrams and fields, export it to Kaitai, or start one.
    #[command(subcommand)]
    Dialect(DialectCommand),
    /// Write the deterministic sample captures (see samples/README.md).
    Generate {
        /// Directory to write every sample into.
        #[arg(long, value_name = "DIR")]
        all: Option<PathBuf>,
        /// Write a large benchmark capture with this many datagrams to --output.
        #[arg(long, value_name = "N")]
        large: Option<u64>,
        /// The file --large writes.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

/// Runs the command line; `rtype-inspect FILE` means `rtype-inspect summary FILE`.
pub fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cli = match parse(&args) {
        Ok(cli) => cli,
        Err(e) => return clap_exit(&e),
    };
    let mut dialects = cli.dialects.clone();
    let loaded = crate::app::config::dialects_in(&args)
        .map(|more| dialects.extend(more))
        .and_then(|()| crate::describe::loaded::load(&dialects));
    if let Err(message) = loaded {
        eprintln!("rtype-inspect: {message}");
        return ExitCode::from(2);
    }
    let command = match cli.command {
        Some(command) => command,
        None => {
            if let Some(e) = mistyped_command(&cli.summary.inputs.files) {
                return clap_exit(&e);
            }
            Command::Summary(cli.summary)
        }
    };
    match run(command, cli.color) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("rtype-inspect: {message}");
            ExitCode::from(2)
        }
    }
}

/// Parses the arguments. Options given before a command's name (`rtype-inspect -q packets F`)
/// are the command's: they are moved after its name, as if typed there (only the global --color
/// is the top level's own).
fn parse(args: &[std::ffi::OsString]) -> Result<Cli, clap::Error> {
    let mut command = Cli::command();
    let matches = command.try_get_matches_from_mut(args)?;
    if let Some((name, _)) = matches.subcommand() {
        let before = matches.ids().any(|id| {
            id.as_str() != "color"
                && matches.value_source(id.as_str()) == Some(clap::parser::ValueSource::CommandLine)
        });
        if before {
            return options_after_command(args, name);
        }
    }
    Cli::from_arg_matches(&matches).map_err(|e| e.format(&mut command))
}

/// The arguments parsed again with the command's name moved before the options that preceded it:
/// the first place the name appears that gives a valid command line, else the error of the first.
fn options_after_command(args: &[std::ffi::OsString], name: &str) -> Result<Cli, clap::Error> {
    let mut first_error = None;
    for at in (1..args.len()).filter(|&i| args[i] == name) {
        let moved: Vec<&std::ffi::OsString> = args[..1]
            .iter()
            .chain(&args[at..=at])
            .chain(&args[1..at])
            .chain(&args[at + 1..])
            .collect();
        let mut command = Cli::command();
        let parsed = command
            .try_get_matches_from_mut(moved)
            .and_then(|m| Cli::from_arg_matches(&m).map_err(|e| e.format(&mut command)));
        match parsed {
            Ok(cli) => return Ok(cli),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    Err(first_error.unwrap_or_else(|| {
        Cli::command().error(
            clap::error::ErrorKind::ArgumentConflict,
            format!("put the options of {name} after its name"),
        )
    }))
}

/// The command line as the completion scripts see it: the options that name a snapshot profile,
/// a rule, a message type or display-filter fields offer them (`--profile` offers the bundled
/// names; a profile file is still accepted, typed whole).
fn completed(command: clap::Command) -> clap::Command {
    use crate::proto::profile::BUNDLED;
    let profiles = ["document"]
        .into_iter()
        .chain(BUNDLED.iter().map(|(name, _)| *name));
    let messages = crate::proto::rtype::MESSAGES
        .iter()
        .chain(crate::proto::rt::MESSAGES)
        .map(|m| m.name)
        .chain(crate::proto::rtnp::MESSAGES.iter().map(|m| m.message.name));
    // Completion is a one-off run: the field names live as long as it does.
    let registry = crate::proto::registry::Registry::new(&Profile::document());
    let offers = Offers {
        profiles: profiles.collect(),
        rules: crate::proto::Rule::all().iter().map(|r| r.id()).collect(),
        messages: messages.collect(),
        fields: registry
            .names()
            .map(|n| &*Box::leak(n.to_owned().into_boxed_str()))
            .collect(),
    };
    offers.offered(command)
}

/// The values [`completed`] offers.
struct Offers {
    profiles: Vec<&'static str>,
    rules: Vec<&'static str>,
    messages: Vec<&'static str>,
    fields: Vec<&'static str>,
}

impl Offers {
    fn offered(&self, command: clap::Command) -> clap::Command {
        let offer = |values: &[&'static str]| clap::builder::PossibleValuesParser::new(values);
        command
            .mut_args(|arg| match arg.get_id().as_str() {
                "profile" => arg.value_parser(offer(&self.profiles)),
                "allow" | "violation" => arg.value_parser(offer(&self.rules)),
                "types" => arg.value_parser(offer(&self.messages)),
                "filter" | "field" => arg.value_parser(offer(&self.fields)),
                _ => arg,
            })
            .mut_subcommands(|c| self.offered(c))
    }
}

/// The manual page, roff, from the command line's definition.
pub fn man_page() -> Vec<u8> {
    let mut page = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = clap_mangen::Man::new(Cli::command()).render(&mut page);
    page
}

/// Prints clap's message; help and version exit 0, errors 2.
fn clap_exit(e: &clap::Error) -> ExitCode {
    let _ = e.print();
    ExitCode::from(if e.use_stderr() { 2 } else { 0 })
}

/// clap's "unrecognized subcommand ... a similar subcommand exists" for a first argument that is
/// no file but looks like a mistyped command (`pakcets`, `violation`): without it the summary
/// would say "No such file". A file of that name is read as a capture.
fn mistyped_command(files: &[PathBuf]) -> Option<clap::Error> {
    let word = files.first()?.to_str()?;
    if word.contains(['.', '/', std::path::MAIN_SEPARATOR]) || std::path::Path::new(word).exists() {
        return None;
    }
    let cli = Cli::command();
    let usage = cli.clone().render_usage().to_string();
    let mut only_commands = clap::Command::new("rtype-inspect")
        .subcommands(cli.get_subcommands().cloned())
        .override_usage(usage.trim_start_matches("Usage: ").to_owned());
    let e = only_commands
        .try_get_matches_from_mut(["rtype-inspect", word])
        .err()?;
    e.get(clap::error::ContextKind::SuggestedSubcommand)?;
    Some(e)
}

/// Runs the command with what its function needs.
fn run(command: Command, color: ColorChoice) -> Result<ExitCode, String> {
    let term = Term::stdout(color);
    match command {
        Command::Summary(SummaryArgs {
            inputs,
            format,
            read,
        }) => commands::summary(&inputs, format, &read, term),
        Command::Packets(args) => commands::packets(args.into(), term),
        Command::Export(args) => commands::export(args.into()),
        Command::Stats(args) => report::stats::run(args.into(), term),
        Command::Entity(args) => report::entity::run(args.into()),
        Command::World(args) => report::world::run(args.into(), term),
        Command::Check(args) => report::check::run(args.into(), term),
        Command::Profile(args) => report::profile::run(args.into(), term),
        Command::Diff(args) => report::diff::run(args.into(), term),
        Command::Report(args) => report::html::run(args.into()),
        Command::Protocol => write_stdout(report::protocol_doc::markdown().as_bytes()),
        Command::Violations { format } => commands::violations(format, term),
        Command::Dissector { output, profile } => {
            commands::dissector(output.as_deref(), profile.as_deref())
        }
        Command::Live(args) => report::live::run(args.into(), term),
        Command::Proxy(args) => crate::proxy::run(args, color),
        Command::Replay(args) => crate::proxy::replay(args, term),
        Command::Fields {
            format,
            values,
            profile,
        } => commands::fields(format, values, profile.as_deref()),
        Command::Tables { profile } => commands::tables(profile.as_deref()),
        Command::Completions { shell } => completions(shell),
        Command::Man => write_stdout(&man_page()),
        Command::Dialect(command) => dialect(command),
        Command::Interfaces { format } => report::live::interfaces(format, term),
        Command::Generate { all, large, output } => commands::generate(all, large, output),
    }
}

/// `completions`: the shell's script, offering [`completed`]'s values.
fn completions(shell: clap_complete::Shell) -> Result<ExitCode, String> {
    let mut script = Vec::new();
    let mut command = completed(Cli::command());
    clap_complete::generate(shell, &mut command, "rtype-inspect", &mut script);
    if shell == clap_complete::Shell::Bash {
        // clap_complete spells a subcommand's state one way where it sets it and another where
        // it matches it when the name has a hyphen, so no option after a subcommand completed
        // (clap-rs/clap#6421): the matching arms are respelt.
        let text = String::from_utf8_lossy(&script);
        script = text
            .replace("rtype__subcmd__inspect", "rtype__inspect")
            .into_bytes();
    }
    write_stdout(&script)
}
