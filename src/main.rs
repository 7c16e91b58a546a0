#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    sr_bench::cli::main()
}

// The wasm build is a library; this binary only exists natively.
#[cfg(target_arch = "wasm32")]
fn main() {}
