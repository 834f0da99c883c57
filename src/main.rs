fn main() -> std::process::ExitCode {
    rtype_inspect::cli::main()
}
