"""A tool of one's own: a gene caller run on the fragment itself, reporting the strand it finds.

pyrodigal (Prodigal's gene finder) in metagenomic mode, with its pre-trained models, calls
genes on a short fragment without any training on its genome; the tool reports each call's
strand relative to the fragment as given. Registered with ``fgpo_core`` by name, so a library
can put it in a slot beside the built-in tools
(``fgpo table build --plugin examples/byo/gene_tool.py --tools composition,gene_call,expert``).
Nothing in ``fgpo_core`` is edited: a tool is any object with ``name``, ``title``, ``version``
and ``run(ToolInput) -> Evidence``.
"""
import pyrodigal

from fgpo_core.genomics.tools import Evidence, register_tool


@register_tool("gene_call")
class GeneCall:
    """Genes pyrodigal calls on each sequence, with their strand relative to the sequence."""

    name = "gene_call"
    title = "Gene caller (pyrodigal, metagenomic mode)"
    version = f"pyrodigal-{pyrodigal.__version__}"

    def __init__(self):
        self.finder = pyrodigal.GeneFinder(meta=True)

    def run(self, inp):
        records, lines = {}, {}
        for label, seq in inp.sequences.items():
            genes = [g for g in self.finder.find_genes(seq.upper().encode()) if g.end - g.begin + 1 >= 90]
            genes.sort(key=lambda g: -g.score)
            records[label] = {"genes": [{"begin": g.begin, "end": g.end, "strand": g.strand,
                                         "score": round(g.score, 1)} for g in genes]}
            if not genes:
                lines[label] = ["No gene called on either strand"]
                continue
            lines[label] = [f"Gene called on the {'given' if g.strand > 0 else 'opposite'} strand: bases "
                            f"{g.begin}-{g.end}, score {g.score:.1f}" for g in genes[:2]]
        return Evidence(self.name, self.title, records, lines)
