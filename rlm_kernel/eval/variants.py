"""Questions about genomic variants: a family's joint variant calls, annotated, as a VCF file in one
string (``dev``), or a clinical lab's table of a batch of samples' annotated variants loaded into a
pandas DataFrame (``test``).

What a notebook holds when someone looks through a gene panel's results: each variant with its
place on a chromosome, its reference and alternate alleles, the call's quality and whether it
passed the caller's filters, the gene and what the change does to it, and each sample's genotype
and read depth. Some sites have two alternate alleles, some calls are missing (``./.``) or phased
(``0|1``), some variants have no dbSNP identifier or population frequency, and genes whose names
extend another's stand beside each other (``TTN`` and ``TTN-AS1``). The lab's table repeats the
common variants in sample after sample, with rows that failed a filter among them. Variants are
added until the text (or the frame as CSV) is about the length asked for. Kinds of question:

- ``count``: one gene's variants that passed the filters, or the sites where one sample is
  heterozygous on one chromosome (``dev``); one sample's variants classed pathogenic, or one
  gene's variants rarer than a frequency (``test``);
- ``mean``: the mean depth of the passing variants on one chromosome, or the mean quality of one
  gene's variants (``dev``); the mean depth of one sample's passing rows, or the mean CADD score of
  one gene's missense variants (``test``);
- ``top``: the gene with the most passing missense variants, or the chromosome with the most
  variants that failed a filter (``dev``); the gene with the most rare variants, or the sample
  with the most heterozygous variants in one gene (``test``) (a clear leader);
- ``lookup``: one sample's genotype at one position, or a position's dbSNP identifier (``dev``);
  one sample's allele fraction at one position, or the protein change of one sample's variant
  (``test``).

Every answer is computed from the variants the generator wrote. Score: ``exact``.

Splits: ``dev`` is a VCF 4.2 file as a caller and an annotator leave it: ``##`` meta lines (the
filters, the INFO and FORMAT fields, the contigs), then one tab-separated line a site (``#CHROM``
``POS`` ``ID`` ``REF`` ``ALT`` ``QUAL`` ``FILTER`` ``INFO`` ``FORMAT`` and three samples), INFO
with ``AC``, ``AF``, ``AN``, ``DP``, ``MQ``, ``QD`` and ``ANN`` (an annotation an allele, its
fields between ``|``), FORMAT ``GT:AD:DP:GQ:PL``; ``test`` is a DataFrame (``sample_id`` and
``chromosome`` categorical, ``position`` and ``depth`` int64, ``reference``, ``alternate``, ``gene``,
``hgvs_c`` and ``hgvs_p`` with NaN where there is none, ``consequence`` categorical, ``zygosity``,
``vaf``, ``gnomad_af`` and ``cadd_phred`` floats with NaN, ``clinvar`` with NaN, ``filter_status``,
``run_date``):
other containers, fields, genes and wording.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .tasks import Task, TaskRef, as_text, asked_task, draw_question, family

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["KINDS", "make"]

KINDS = ("count", "mean", "top", "lookup")

_DEV_GENES = (  # gene, chromosome, start, end, protein length (GRCh38, near enough)
    ("MYBPC3", "11", 47331406, 47352702, 1274),
    ("MYH7", "14", 23412740, 23435660, 1935),
    ("TNNT2", "1", 201359008, 201377764, 298),
    ("LMNA", "1", 156082573, 156140089, 664),
    ("SCN5A", "3", 38548062, 38649687, 2016),
    ("KCNH2", "7", 150944961, 150978321, 1159),
    ("KCNQ1", "11", 2444684, 2849105, 676),
    ("RYR2", "1", 237042184, 237833988, 4967),
    ("TTN", "2", 178525989, 178807423, 34350),
    ("DSP", "6", 7541617, 7586714, 2871),
    ("PKP2", "12", 32790755, 32896840, 881),
    ("FBN1", "15", 48408313, 48645709, 2871),
    ("LDLR", "19", 11089462, 11133820, 860),
    ("APOB", "2", 21001429, 21044073, 4563),
    ("PCSK9", "1", 55039548, 55064852, 692),
)
_TEST_GENES = (
    ("BRCA1", "17", 43044295, 43125483, 1863),
    ("BRCA2", "13", 32315474, 32400266, 3418),
    ("TP53", "17", 7668402, 7687550, 393),
    ("MLH1", "3", 36993332, 37050918, 756),
    ("MSH2", "2", 47403067, 47634501, 934),
    ("MSH6", "2", 47783082, 47806954, 1360),
    ("PMS2", "7", 5970925, 6009106, 862),
    ("APC", "5", 112707498, 112846239, 2843),
    ("PTEN", "10", 87863113, 87971930, 403),
    ("ATM", "11", 108222484, 108369102, 3056),
    ("CHEK2", "22", 28687743, 28742422, 543),
    ("PALB2", "16", 23603160, 23641310, 1186),
    ("CDH1", "16", 68737292, 68835537, 882),
    ("STK11", "19", 1205778, 1228430, 433),
)
_CONSEQUENCES = (  # consequence, impact, weight
    ("missense_variant", "MODERATE", 3.0),
    ("synonymous_variant", "LOW", 2.5),
    ("intron_variant", "MODIFIER", 3.5),
    ("splice_region_variant&intron_variant", "LOW", 0.6),
    ("3_prime_UTR_variant", "MODIFIER", 0.9),
    ("stop_gained", "HIGH", 0.35),
    ("frameshift_variant", "HIGH", 0.35),
)
_AA = (
    "Ala", "Arg", "Asn", "Asp", "Cys", "Gln", "Glu", "Gly", "His", "Ile",
    "Leu", "Lys", "Met", "Phe", "Pro", "Ser", "Thr", "Trp", "Tyr", "Val",
)  # fmt: skip
_BASES = "ACGT"
_DEV_SAMPLES = ("HG-0142-P", "HG-0142-M", "HG-0142-F")
_VQSR = "VQSRTrancheSNP99.90to100.00"


@dataclass
class Variant:
    gene: int
    chrom: str
    pos: int
    ref: str
    alts: list[str]
    consequence: int
    hgvs_c: str
    hgvs_p: str  # "" where the change has none
    rsid: str = ""
    qual: float = 0.0
    filter: str = "PASS"
    depth: int = 0
    calls: list[tuple[str, list[int], int, int]] = field(default_factory=list)  # GT, AD, DP, GQ
    antisense: bool = False  # dev: TTN-AS1 annotated after TTN
    frequency: float | None = None  # test: gnomAD's
    clinvar: str | None = None
    cadd: float | None = None


def _change(rng: random.Random, protein: int, consequence: str) -> tuple[str, str, str, list[str]]:
    """HGVS c. and p. of a change, its REF and ALT."""
    codon = rng.randrange(1, protein + 1)
    cpos = (codon - 1) * 3 + rng.randint(1, 3)
    ref = rng.choice(_BASES)
    alt = rng.choice([b for b in _BASES if b != ref])
    aa = rng.choice(_AA)
    if consequence == "frameshift_variant":
        extra, shift = rng.choice(_BASES), f"p.{aa}{codon}{rng.choice(_AA)}fsTer{rng.randint(3, 40)}"
        if rng.random() < 0.5:
            return f"c.{cpos}_{cpos + 1}ins{extra}", shift, ref, [ref + extra]
        return f"c.{cpos + 1}del{extra}", shift, ref + extra, [ref]
    if consequence == "missense_variant":
        return f"c.{cpos}{ref}>{alt}", f"p.{aa}{codon}{rng.choice([a for a in _AA if a != aa])}", ref, [alt]
    if consequence == "synonymous_variant":
        return f"c.{cpos}{ref}>{alt}", f"p.{aa}{codon}=", ref, [alt]
    if consequence == "stop_gained":
        return f"c.{cpos}{ref}>{alt}", f"p.{aa}{codon}Ter", ref, [alt]
    if consequence == "3_prime_UTR_variant":
        return f"c.*{rng.randint(10, 900)}{ref}>{alt}", "", ref, [alt]
    sign = rng.choice("+-")
    distance = rng.randint(3, 8) if consequence.startswith("splice") else rng.randint(20, 3000)
    return f"c.{cpos}{sign}{distance}{ref}>{alt}", "", ref, [alt]


def _variants(split: str, seed: str, n: int) -> list[Variant]:
    """``n`` distinct variants in the split's genes, each at its own position."""
    rng = random.Random(f"{seed}/{n}")
    genes = _DEV_GENES if split == "dev" else _TEST_GENES
    weight = [rng.uniform(0.3, 2.0) * (1 + g[4] / 3000) for g in genes]
    cweight = [c[2] * rng.uniform(0.6, 1.4) for c in _CONSEQUENCES]
    used: set[tuple[str, int]] = set()
    out = []
    while len(out) < n:
        g = rng.choices(range(len(genes)), weight)[0]
        _, chrom, start, end, protein = genes[g]
        pos = rng.randrange(start, end)
        if (chrom, pos) in used:
            continue
        used.add((chrom, pos))
        k = rng.choices(range(len(_CONSEQUENCES)), cweight)[0]
        hgvs_c, hgvs_p, ref, alts = _change(rng, protein, _CONSEQUENCES[k][0])
        v = Variant(g, chrom, pos, ref, alts, k, hgvs_c, hgvs_p)
        if split == "dev" and len(ref) == len(alts[0]) == 1 and rng.random() < 0.05:
            v.alts.append(rng.choice([b for b in _BASES if b not in (ref, alts[0])]))  # a second allele
        v.rsid = f"rs{rng.randrange(1_000_000, 1_900_000_000)}" if rng.random() < 0.7 else ""
        v.antisense = genes[g][0] == "TTN" and rng.random() < 0.5
        out.append(v)
    return out


# -- the dev VCF --------------------------------------------------------------------------------


def _draw_calls(v: Variant, rng: random.Random) -> list[str]:
    """Three samples' genotypes at a site, at least one of them carrying an alternate allele."""
    while True:
        gts = []
        for _ in _DEV_SAMPLES:
            r = rng.random()
            gt = "./." if r < 0.06 else "0/0" if r < 0.45 else "1/1" if r > 0.85 else "0/1"
            if gt == "0/1" and rng.random() < 0.12:
                gt = "0|1"
            if len(v.alts) > 1 and gt == "0/1" and rng.random() < 0.5:
                gt = "1/2"
            gts.append(gt)
        if any(g not in ("./.", "0/0") for g in gts):
            return gts


def _genotypes(v: Variant, rng: random.Random) -> None:
    """The samples' calls at a site, each with its allele depths, depth and quality."""
    v.depth, v.calls = 0, []
    for gt in _draw_calls(v, rng):
        if gt == "./.":
            v.calls.append((gt, [0] * (1 + len(v.alts)), 0, 0))
            continue
        dp = rng.randint(8, 140)
        alleles = [int(a) for a in gt.replace("|", "/").split("/")]
        ad = [0] * (1 + len(v.alts))
        if alleles[0] == alleles[1]:
            ad[alleles[0]] = dp - rng.randint(0, 2)
        else:
            ad[alleles[0]] = dp // 2 + rng.randint(-dp // 5, dp // 5)
            ad[alleles[1]] = dp - ad[alleles[0]] - rng.randint(0, 1)
        v.calls.append((gt, ad, dp, rng.randint(20, 99)))
        v.depth += dp


def _dev_sites(seed: str, n: int) -> list[Variant]:
    rng = random.Random(f"{seed}/calls")
    sites = _variants("dev", seed, n)
    for v in sites:
        _genotypes(v, rng)
        v.qual = round(rng.uniform(25, 120) * (1 + v.depth / 40), 2)
        r = rng.random()
        v.filter = "LowQual" if v.qual < 60 and r < 0.6 else _VQSR if r > 0.9 else "PASS"
    order = {str(c): k for k, c in enumerate([*range(1, 23), "X"])}
    sites.sort(key=lambda v: (order[v.chrom], v.pos))
    return sites


def _ann(v: Variant) -> str:
    gene, _, _, _, protein = _DEV_GENES[v.gene]
    consequence, impact, _ = _CONSEQUENCES[v.consequence]
    transcript = f"ENST{(v.gene * 7919 + 380152) % 999_999:011d}.{v.gene % 9 + 1}"
    parts = []
    for k, alt in enumerate(v.alts):
        c, p, what, level = v.hgvs_c, v.hgvs_p, consequence, impact
        if k > 0:  # the second allele of a site: the same codon, unchanged
            c = v.hgvs_c[:-1] + alt
            if v.hgvs_p:
                p, what, level = (
                    re.match(r"p\.[A-Za-z]{3}\d+", v.hgvs_p).group() + "=",
                    "synonymous_variant",
                    "LOW",
                )
        fields = [alt, what, level, gene, f"ENSG{(v.gene * 104729 + 139618) % 999_999:011d}", "transcript"]
        fields += [
            transcript,
            "protein_coding",
            f"{v.pos % 27 + 1}/28",
            c,
            p,
            "",
            "",
            f"/{protein}" if p else "",
        ]
        parts.append("|".join([*fields, "", ""]))
        if v.antisense:
            parts.append(
                f"{alt}|intron_variant|MODIFIER|TTN-AS1|ENSG00000237298|transcript|ENST00000659121.1|"
                f"lncRNA|3/11|n.{v.pos % 900 + 40}-{v.pos % 300 + 5}{v.ref[-1]}>{alt[-1]}||||||"
            )
    return "ANN=" + ",".join(parts)


def _site_line(v: Variant, rng: random.Random) -> str:
    called = [int(a) for gt, *_ in v.calls if gt != "./." for a in gt.replace("|", "/").split("/")]
    an = len(called)
    ac = [called.count(k + 1) for k in range(len(v.alts))]
    af = [round(a / an, 3) for a in ac]
    info = (
        f"AC={','.join(map(str, ac))};AF={','.join(f'{x:g}' for x in af)};AN={an};DP={v.depth};"
        f"MQ={rng.uniform(55, 60):.2f};QD={v.qual / max(v.depth, 1):.2f};{_ann(v)}"
    )
    samples = []
    for gt, ad, dp, gq in v.calls:
        if gt == "./.":
            samples.append("./.:" + ",".join("0" for _ in ad) + ":0:.:.")
        else:
            pl = [rng.randrange(1, 3000) for _ in range((len(ad) * (len(ad) + 1)) // 2)]
            alleles = sorted(int(a) for a in gt.replace("|", "/").split("/"))
            pl[alleles[1] * (alleles[1] + 1) // 2 + alleles[0]] = 0  # the call's own likelihood
            pl = ",".join(map(str, pl))
            samples.append(f"{gt}:{','.join(map(str, ad))}:{dp}:{gq}:{pl}")
    return "\t".join(
        [
            f"chr{v.chrom}",
            str(v.pos),
            v.rsid or ".",
            v.ref,
            ",".join(v.alts),
            f"{v.qual:.2f}",
            v.filter,
            info,
            "GT:AD:DP:GQ:PL",
            *samples,
        ]
    )


_CONTIGS = (
    (1, 248956422), (2, 242193529), (3, 198295559), (4, 190214555), (5, 181538259), (6, 170805979),
    (7, 159345973), (8, 145138636), (9, 138394717), (10, 133797422), (11, 135086622), (12, 133275309),
    (13, 114364328), (14, 107043718), (15, 101991189), (16, 90338345), (17, 83257441), (18, 80373285),
    (19, 58617616), (20, 64444167), (21, 46709983), (22, 50818468), ("X", 156040895), ("Y", 57227415),
)  # fmt: skip


def _vcf(sites: list[Variant], seed: str) -> str:
    rng = random.Random(seed)
    fields = (
        "Allele | Annotation | Annotation_Impact | Gene_Name | Gene_ID | Feature_Type | Feature_ID | "
        "Transcript_BioType | Rank | HGVS.c | HGVS.p | cDNA.pos / cDNA.length | CDS.pos / CDS.length | "
        "AA.pos / AA.length | Distance | ERRORS / WARNINGS / INFO"
    )
    lines = [
        "##fileformat=VCFv4.2",
        '##FILTER=<ID=PASS,Description="All filters passed">',
        '##FILTER=<ID=LowQual,Description="Low quality">',
        f'##FILTER=<ID={_VQSR},Description="Truth sensitivity tranche level for SNP model at VQS Lod '
        '< -9.1">',
        '##FORMAT=<ID=AD,Number=R,Type=Integer,Description="Allelic depths for the ref and alt alleles">',
        '##FORMAT=<ID=DP,Number=1,Type=Integer,Description="Approximate read depth">',
        '##FORMAT=<ID=GQ,Number=1,Type=Integer,Description="Genotype Quality">',
        '##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">',
        '##FORMAT=<ID=PL,Number=G,Type=Integer,Description="Normalized, Phred-scaled likelihoods">',
        '##GATKCommandLine=<ID=GenotypeGVCFs,Version=4.4.0.0,Date="May 21, 2024">',
        '##INFO=<ID=AC,Number=A,Type=Integer,Description="Allele count in genotypes">',
        '##INFO=<ID=AF,Number=A,Type=Float,Description="Allele Frequency">',
        '##INFO=<ID=AN,Number=1,Type=Integer,Description="Total number of alleles in called genotypes">',
        '##INFO=<ID=DP,Number=1,Type=Integer,Description="Approximate read depth">',
        '##INFO=<ID=MQ,Number=1,Type=Float,Description="RMS Mapping Quality">',
        '##INFO=<ID=QD,Number=1,Type=Float,Description="Variant Confidence/Quality by Depth">',
        f"##INFO=<ID=ANN,Number=.,Type=String,Description=\"Functional annotations: '{fields}' \">",
    ]
    lines += [f"##contig=<ID=chr{c},length={n},assembly=GRCh38>" for c, n in _CONTIGS]
    lines += [
        "##reference=file:///refs/GRCh38/Homo_sapiens_assembly38.fasta",
        '##SnpEffVersion="5.1d (build 2022-04-19 15:49), by Pablo Cingolani"',
        "#"
        + "\t".join(["CHROM", "POS", "ID", "REF", "ALT", "QUAL", "FILTER", "INFO", "FORMAT", *_DEV_SAMPLES]),
    ]
    lines += [_site_line(v, rng) for v in sites]
    return "\n".join(lines) + "\n"


# -- the test table -----------------------------------------------------------------------------


@dataclass
class Row:
    sample: int
    variant: Variant
    zygosity: str
    depth: int
    vaf: float
    filter: str


def _test_rows(seed: str, n: int) -> tuple[list[Row], list[str], list[str]]:
    """About ``n`` rows: a few dozen a sample, common variants in many samples."""
    rng = random.Random(f"{seed}/{n}/rows")
    samples = max(3, round(n / 32))
    pool = _variants("test", seed, max(8, round(n / 2.2)))
    for v in pool:
        lof = _CONSEQUENCES[v.consequence][1] == "HIGH"
        common = not lof and rng.random() < 0.35
        if common:
            v.frequency = round(rng.uniform(0.01, 0.6), 4)
        else:
            v.frequency = None if rng.random() < 0.25 else float(f"{rng.uniform(1e-6, 0.004):.2e}")
        if common:
            v.clinvar = rng.choice(("Benign", "Likely_benign", None))
        elif lof:
            v.clinvar = rng.choice(("Pathogenic", "Likely_pathogenic", "Pathogenic/Likely_pathogenic", None))
        else:
            v.clinvar = rng.choice(
                (
                    "Uncertain_significance",
                    "Conflicting_classifications_of_pathogenicity",
                    None,
                    None,
                    "Likely_benign",
                )
            )
        top = 45 if lof else 34 if v.consequence == 0 else 16
        indel = len(v.ref) != len(v.alts[0])
        v.cadd = None if indel and rng.random() < 0.5 else round(rng.uniform(top / 3 if lof else 0.1, top), 1)
    weight = [20.0 if v.frequency and v.frequency > 0.01 else 1.0 for v in pool]
    rows: list[Row] = []
    for s in range(samples):
        mine = {
            id(v): v
            for v in rng.choices(pool, weight, k=rng.randint(max(3, n // samples - 8), n // samples + 8))
        }
        for v in mine.values():
            hom = v.frequency is not None and v.frequency > 0.01 and rng.random() < v.frequency
            depth = rng.randint(12, 420)
            alt = depth - rng.randint(0, 2) if hom else round(depth * rng.uniform(0.35, 0.62))
            flt = "LowDP" if depth < 20 else "StrandBias" if rng.random() < 0.05 else "PASS"
            if not hom and rng.random() < 0.05:
                alt, flt = round(depth * rng.uniform(0.04, 0.18)), "LowVAF"
            rows.append(Row(s, v, "HOM" if hom else "HET", depth, round(alt / depth, 3), flt))
    order = {str(c): k for k, c in enumerate([*range(1, 23), "X"])}
    rows.sort(key=lambda r: (r.sample, order[r.variant.chrom], r.variant.pos))
    names = [f"NGS24-{rng.randrange(300, 900):04d}" for _ in range(samples)]
    while len(set(names)) < samples:
        names = [f"NGS24-{rng.randrange(300, 900):04d}" for _ in range(samples)]
    names.sort()
    dates = sorted(f"2024-{rng.randint(2, 5):02d}-{rng.randint(1, 28):02d}" for _ in range(samples))
    return rows, names, dates


def _frame(rows: list[Row], names: list[str], dates: list[str]) -> pd.DataFrame:
    import pandas as pd  # only here: listing and the dev split need no pandas

    nan = float("nan")
    genes = [g[0] for g in _TEST_GENES]
    return pd.DataFrame(
        {
            "sample_id": pd.Categorical([names[r.sample] for r in rows], categories=names),
            "run_date": pd.to_datetime([dates[r.sample] for r in rows]),
            "chromosome": pd.Categorical(
                [r.variant.chrom for r in rows], categories=[str(c) for c in [*range(1, 23), "X"]]
            ),
            "position": pd.array([r.variant.pos for r in rows], dtype="int64"),
            "reference": [r.variant.ref for r in rows],
            "alternate": [r.variant.alts[0] for r in rows],
            "gene": [genes[r.variant.gene] for r in rows],
            "consequence": pd.Categorical([_CONSEQUENCES[r.variant.consequence][0] for r in rows]),
            "hgvs_c": [r.variant.hgvs_c for r in rows],
            "hgvs_p": [r.variant.hgvs_p or nan for r in rows],
            "zygosity": [r.zygosity for r in rows],
            "depth": pd.array([r.depth for r in rows], dtype="int64"),
            "vaf": [r.vaf for r in rows],
            "gnomad_af": [nan if r.variant.frequency is None else r.variant.frequency for r in rows],
            "clinvar": [r.variant.clinvar or nan for r in rows],
            "cadd_phred": [nan if r.variant.cadd is None else r.variant.cadd for r in rows],
            "filter_status": [r.filter for r in rows],
        }
    )


def _fit(split: str, seed: str, chars: int) -> tuple[object, object, int]:
    per = 520 if split == "dev" else 150
    n = max(6, chars // per)
    for _ in range(6):
        if split == "dev":
            data: object = _dev_sites(seed, n)
            context: object = _vcf(data, seed)
            count = n
        else:
            data = _test_rows(seed, n)
            context = _frame(*data)
            count = len(data[0])
        size = len(as_text(context))
        if 0.85 * chars <= size <= 1.1 * chars:
            break
        n = max(6, round(n * chars / size))
    return data, context, count


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None


def _leader(counts: dict) -> object:
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])[:2]
    return None if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]) else ranked[0][0]


def _het(gt: str) -> bool:
    a, b = gt.replace("|", "/").split("/")
    return a != "." and a != b


def _dev_gene(v: Variant) -> str:
    return _DEV_GENES[v.gene][0]


def _ask_dev(kind: str, rng: random.Random, sites: list[Variant]) -> _Asked:
    v = rng.choice(sites)
    gene, chrom = _dev_gene(v), f"chr{v.chrom}"
    passing = [x for x in sites if x.filter == "PASS"]
    if kind == "count":
        if rng.random() < 0.5:
            n = sum(_dev_gene(x) == gene for x in passing)
            q = f"How many variants in {gene} (the gene of their first ANN annotation) have FILTER PASS?"
            return q, n, {"gene": gene}
        s = rng.randrange(len(_DEV_SAMPLES))
        n = sum(f"chr{x.chrom}" == chrom and _het(x.calls[s][0]) for x in sites)
        q = f"At how many sites on {chrom} is {_DEV_SAMPLES[s]} heterozygous (two different alleles called)?"
        return q, n, {"sample": _DEV_SAMPLES[s], "chrom": chrom}
    if kind == "mean":
        if rng.random() < 0.5:
            depths = [x.depth for x in passing if f"chr{x.chrom}" == chrom]
            if not depths:
                return None
            q = f"What is the mean INFO DP of the PASS variants on {chrom}? One decimal."
            return q, round(sum(depths) / len(depths), 1), {"chrom": chrom}
        quals = [x.qual for x in sites if _dev_gene(x) == gene]
        q = f"What is the mean QUAL of the variants in {gene}, whatever their FILTER? Two decimals."
        return q, round(sum(quals) / len(quals), 2), {"gene": gene}
    if kind == "top":
        if rng.random() < 0.5:
            top = _leader(Counter(_dev_gene(x) for x in passing if x.consequence == 0))
            q = "Which gene has the most PASS sites whose first ANN annotation is a missense_variant?"
            return None if top is None else (q, top, {"by": "gene"})
        top = _leader(Counter(f"chr{x.chrom}" for x in sites if x.filter != "PASS"))
        q = "Which chromosome has the most variants that failed a filter (FILTER other than PASS)?"
        return None if top is None else (q, top, {"by": "chrom"})
    if rng.random() < 0.5:
        s = rng.randrange(len(_DEV_SAMPLES))
        q = f"What genotype (GT) does {_DEV_SAMPLES[s]} have at {chrom}:{v.pos}?"
        return q, v.calls[s][0], {"sample": _DEV_SAMPLES[s], "chrom": chrom, "pos": v.pos}
    if not v.rsid:
        return None
    q = f"What is the dbSNP ID of the variant at {chrom}:{v.pos}?"
    return q, v.rsid, {"chrom": chrom, "pos": v.pos}


_PATHOGENIC = ("Pathogenic", "Likely_pathogenic", "Pathogenic/Likely_pathogenic")


def _ask_test(kind: str, rng: random.Random, data: tuple[list[Row], list[str], list[str]]) -> _Asked:
    rows, names, _ = data
    r = rng.choice(rows)
    gene, sample = _TEST_GENES[r.variant.gene][0], names[r.sample]
    if kind == "count":
        if rng.random() < 0.5:
            n = sum(x.sample == r.sample and x.variant.clinvar in _PATHOGENIC for x in rows)
            q = (
                f"Count the rows of sample_id {sample} whose clinvar is Pathogenic, Likely_pathogenic or "
                "Pathogenic/Likely_pathogenic."
            )
            return q, n, {"sample": sample}
        below = rng.choice((0.0001, 0.001, 0.005, 0.01))
        n = sum(
            _TEST_GENES[x.variant.gene][0] == gene
            and x.variant.frequency is not None
            and x.variant.frequency < below
            for x in rows
        )
        q = (
            f"Count the rows in gene {gene}, over every sample, with a gnomad_af below {below} (rows "
            "without one left out)."
        )
        return q, n, {"gene": gene, "below": below}
    if kind == "mean":
        if rng.random() < 0.5:
            depths = [x.depth for x in rows if x.sample == r.sample and x.filter == "PASS"]
            q = f"Give the mean depth of the rows of sample_id {sample} whose filter_status is PASS, "
            q += "to one decimal."
            return q, round(sum(depths) / len(depths), 1), {"sample": sample}
        scores = [
            x.variant.cadd
            for x in rows
            if _TEST_GENES[x.variant.gene][0] == gene
            and x.variant.consequence == 0
            and x.variant.cadd is not None
        ]
        if not scores:
            return None
        q = (
            f"Averaged over the missense_variant rows of {gene} that have one, what is the cadd_phred? "
            "Two decimals."
        )
        return q, round(sum(scores) / len(scores), 2), {"gene": gene}
    if kind == "top":
        if rng.random() < 0.5:
            rare = Counter(
                _TEST_GENES[x.variant.gene][0]
                for x in rows
                if x.variant.frequency is None or x.variant.frequency < 0.001
            )
            q = "Over every sample, which gene has the most rows with a gnomad_af below 0.001 or none at all?"
            top = _leader(rare)
            return None if top is None else (q, top, {"by": "gene"})
        top = _leader(
            Counter(
                names[x.sample]
                for x in rows
                if x.zygosity == "HET" and _TEST_GENES[x.variant.gene][0] == gene
            )
        )
        q = f"Which sample_id has the most HET rows in {gene}?"
        return None if top is None else (q, top, {"gene": gene})
    where = f"{r.variant.chrom}:{r.variant.pos}"
    if rng.random() < 0.5:
        q = (
            f"What vaf does the table give for sample_id {sample} at chromosome {r.variant.chrom}, "
            f"position {r.variant.pos}?"
        )
        return q, r.vaf, {"sample": sample, "chrom": r.variant.chrom, "pos": r.variant.pos}
    if not r.variant.hgvs_p:
        return None
    q = f"Which hgvs_p is listed for the variant of sample_id {sample} at {where}?"
    return q, r.variant.hgvs_p, {"sample": sample, "chrom": r.variant.chrom, "pos": r.variant.pos}


@family(
    "variants",
    "genomic variants: a family's annotated VCF as a string (dev), or a lab's table of a batch's variants "
    "as a pandas DataFrame (test)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    data, context, count = _fit(ref.split, f"{rng.random()}", ref.chars)
    kind = KINDS[ref.index % len(KINDS)]

    def ask(kind_: str) -> _Asked:
        return _ask_dev(kind_, rng, data) if ref.split == "dev" else _ask_test(kind_, rng, data)

    kind, asked = draw_question(ask, kind, "lookup", nonzero=True, hidden=True)
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="string (VCF)" if ref.split == "dev" else "DataFrame (variants)",
        variants=count,
    )
