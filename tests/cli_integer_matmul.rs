//! `--integer-matmul`: every command that embeds takes it; on x86-64 with AVX2 it moves a q8_0
//! file's vectors by less than the page-vs-CLI bound (and does move them: the kernel ran), and
//! leaves an f32 file's as they are (only q8_0/q4_0 weights go to the integer kernel).

mod cli_common;
mod common;

fn max_abs(a: &[Vec<f32>], b: &[Vec<f32>]) -> f32 {
    assert_eq!(a.len(), b.len(), "different row counts");
    a.iter()
        .zip(b)
        .flat_map(|(x, y)| x.iter().zip(y).map(|(p, q)| (p - q).abs()))
        .fold(0f32, f32::max)
}

#[test]
fn every_embedding_command_takes_the_flag() {
    cli_common::every_embedding_command_lists("--integer-matmul");
}

#[test]
fn the_flag_reaches_the_kernel_of_a_quantized_file_only() {
    let fixture = common::fixture("all-MiniLM-L6-v2");
    let texts: Vec<&str> = fixture.items.iter().map(|i| i.text.as_str()).collect();
    let q8 = common::model_path("all-MiniLM-L6-v2", "q8_0");
    let moved = max_abs(
        &cli_common::embed(&q8, &[], &texts),
        &cli_common::embed(&q8, &["--integer-matmul"], &texts),
    );
    println!("q8_0 with --integer-matmul against without: max |Δ| {moved:e}");
    #[cfg(target_arch = "x86_64")]
    let simd = std::arch::is_x86_feature_detected!("avx2");
    #[cfg(not(target_arch = "x86_64"))]
    let simd = false;
    if simd {
        // measured 3.67e-5 (2026-12-07)
        assert!(moved > 0.0 && moved < 1e-4, "max |Δ| {moved}");
    } else {
        assert_eq!(moved, 0.0, "without AVX2 candle's products run either way");
    }
    let f32_file = common::model_path("all-MiniLM-L6-v2", "f32");
    let f32_moved = max_abs(
        &cli_common::embed(&f32_file, &[], &texts[..10]),
        &cli_common::embed(&f32_file, &["--integer-matmul"], &texts[..10]),
    );
    assert_eq!(f32_moved, 0.0, "an f32 file's products are the same");
}
