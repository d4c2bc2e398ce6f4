"""The Mako templates, compiled once per installation, not once per process.

Mako turns a template's text into a Python module (lexing, code generation,
Python's compiler): about 50 ms for reorder.cl.mako, in every process. The
lookup here keeps each template's compiled module (its code object, as
``marshal`` writes it) in the persistent cache (clayout/disk_cache.py),
keyed by the template's text, Mako's version, Python's bytecode tag and
clayout's version: an edited template, another Mako or another Python
compiles again. A rejected entry (corrupt, not the user's) is compiled again
and replaced.
"""
from __future__ import annotations

import marshal
import pathlib
import sys
import types

import mako
from mako.lookup import TemplateLookup
from mako.template import ModuleTemplate, Template

from ..disk_cache import disk_cache, entry_key

TEMPLATES = pathlib.Path(__file__).resolve().parents[1] / "templates"
KIND = "templates"


class CachedLookup(TemplateLookup):
    """A TemplateLookup whose templates come from the persistent cache when
    it holds them (``<%namespace file=...>`` loads through it too)."""

    def _load(self, filename, uri):
        with self._mutex:
            template = self._collection.get(uri)
            if template is None:
                template = self._collection[uri] = self._compiled(filename, uri)
            return template

    def _compiled(self, filename: str, uri: str):
        text = pathlib.Path(filename).read_text(encoding="utf-8")
        cache = disk_cache()
        key = entry_key(KIND, uri, text, mako.__version__, sys.implementation.cache_tag,
                        sorted(self.template_args.items()))
        data = cache.load(KIND, key) if cache is not None else None
        if data is not None:
            try:
                return self._from_code(marshal.loads(data), filename, uri, text)
            except Exception:  # noqa: BLE001 - a bad entry: compile the text again
                pass
        template = Template(text=text, uri=uri, filename=filename, lookup=self,
                            **self.template_args)
        if cache is not None:
            code = compile(template.code, template.module_id, "exec")
            cache.store(KIND, key, marshal.dumps(code))
        return template

    def _from_code(self, code, filename: str, uri: str, text: str):
        module = types.ModuleType(uri)
        exec(code, module.__dict__, module.__dict__)  # the module's own body, as import does
        return ModuleTemplate(module, template_filename=filename, template_source=text,
                              lookup=self)


#: Every template of clayout/templates, strict: an undefined name is an error.
# No file time checks: a template is found by its text (the key), and a
# module loaded from the cache keeps the time it was first compiled at, so
# Mako would take any newer file time (an install, a checkout) for an edit
# and load it again at every render.
LOOKUP = CachedLookup(directories=[str(TEMPLATES)], strict_undefined=True,
                      filesystem_checks=False)
