"""Sphinx directive ``.. minisched-module-map::``: every module of the ``minisched`` package
with the first paragraph of its docstring, grouped by package, read from the source tree at
build time (nothing is imported), so the map lists a module the day it is added."""
import ast
import pathlib

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective

PACKAGE = pathlib.Path(__file__).resolve().parents[3] / 'minisched'
#: Directories whose modules are generated or versioned artefacts, not code to find one's way in.
SKIPPED = {'migrations', '__pycache__'}


def summary(path):
    """The first paragraph of ``path``'s module docstring, on one line ('' without one)."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding='utf-8'))) or ''
    return ' '.join(doc.split('\n\n')[0].split())


def modules():
    """``{package path: [(module path, summary)]}`` in path order, packages first."""
    found = {}
    for path in sorted(PACKAGE.rglob('*.py')):
        relative = path.relative_to(PACKAGE.parent)
        if SKIPPED & set(relative.parts) or (path.name == '__init__.py' and not summary(path)):
            continue
        found.setdefault(str(relative.parent), []).append((str(relative), summary(path)))
    return found


class ModuleMapDirective(SphinxDirective):

    def run(self):
        self.env.note_dependency(str(PACKAGE))
        lines = []
        for package, entries in modules().items():
            lines += ['``%s/``' % package, '']
            for module, text in entries:
                lines += ['   ``%s``' % module, '      %s' % (text or '(no docstring)'), '']
        container = nodes.container()
        self.state.nested_parse(StringList(lines, source='<minisched-module-map>'),
                                self.content_offset, container)
        return container.children
