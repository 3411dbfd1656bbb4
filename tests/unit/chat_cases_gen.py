#!/usr/bin/env python3
"""Generates tests/unit/chat_cases.h: unit cases for the chat-template Jinja
interpreter, with the expected output computed by real Jinja2 configured like
transformers' apply_chat_template (see shared/golden/README.md section 3).
Run it by hand after editing CASES: python3 tests/unit/chat_cases_gen.py
Cases marked GUARD test our own limits (Jinja2 has none) and are not rendered
by Jinja2; their expectation is simply "fails"."""
import json, sys, os
import jinja2, jinja2.sandbox, jinja2.ext
from jinja2.exceptions import TemplateError

CTX = {"user": {"name": "Ann", "tags": ["a", "b"]},
       "items": [{"n": 1, "t": "a"}, {"n": 2, "t": "b"}, {"n": 3}],
       "s": "  Hi There  ", "none_v": None, "num": 3, "f": 2.5,
       "words": ["b", "A", "a", "c", "B"], "uni": "héllo wörld ✓"}

GUARD = "GUARD"
CASES = [
    # whitespace control, trim_blocks, lstrip_blocks
    "a  {% if true %}x{% endif %}  b",
    "line1\n    {% if true %}\n    x\n    {% endif %}\nend",
    "{{ 'a' }}  {% if true %}b{% endif %}",
    "a\n  {%- if true -%}\n  b  \n{%- endif %}\nc",
    "{# comment #}\nx",
    "  {# c #}\nx",
    "a {#- c -#} b",
    "  {%+ if true %}x{% endif %}",
    "{% if true +%}\nx{% endif %}",
    "x\n",
    "x\n\n",
    "a\r\nb\rc",
    "{{ 1 }}\n{{ 2 }}\n",
    "{% for x in [1, 2] %}\n  {{ x }}\n{% endfor %}\n",
    "{%- for x in [1, 2] -%}\n  {{- x -}}  \n{%- endfor -%}  \n",
    "\t{% set y = 1 %}\n{{ y }}",
    "{% raw_unknown %}",
    # loops
    "{% for x in [1,2,3] %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }}{{ loop.revindex0 }}|{% endfor %}",
    "{% for x in range(10) if x is odd %}{{ x }}/{{ loop.length }},{% endfor %}",
    "{% for x in [] %}a{% else %}empty{% endfor %}",
    "{% for x in none_v|default([], true) %}a{% else %}e{% endfor %}",
    "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}",
    "{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}",
    "{% for k in {'b': 1, 'a': 2} %}{{ k }}{% endfor %}",
    "{% for c in 'héé' %}[{{ c }}]{% endfor %}",
    "{% for x in items %}{{ loop.previtem.n if loop.previtem is defined else '-' }}{{ loop.nextitem.n if loop.nextitem else '-' }} {% endfor %}",
    "{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{{ x }}{% endfor %}{{ x }}",
    "{% set ns = namespace(x=1) %}{% for i in [1, 2] %}{% set ns.x = ns.x + i %}{% endfor %}{{ ns.x }}",
    "{% for a in [[1, 2], [3, 4]] %}{% for b in a %}{{ loop.index }}{{ b }}{% endfor %};{% endfor %}",
    "{% for x in undefined_thing %}a{% endfor %}b",
    "{% for i in range(3, 0, -1) %}{{ i }}{% endfor %}",
    # macros
    "{% macro f(a, b='d') %}{{ a }}-{{ b }}{% endmacro %}{{ f(1) }}|{{ f(1, 2) }}|{{ f(b=3, a=4) }}|{{ f() }}",
    "{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(3) }}",
    "{% macro w(x) %}[{{ caller() }}{{ x }}]{% endmacro %}{% call w(1) %}in{% endcall %}",
    "{% set g = 'G' %}{% macro f() %}{{ g }}{% endmacro %}{{ f() }}",
    "{%- macro f() -%}\n  body\n{%- endmacro -%}\n[{{ f() }}]",
    "{% macro f() %}{{ later() }}{% endmacro %}{% macro later() %}L{% endmacro %}{{ f() }}",
    "{% set v = f2() if false else 'x' %}{{ v }}",
    "{% for i in range(2) %}{% macro m() %}<{{ i }}>{% endmacro %}{{ m() }}{% endfor %}",
    "{%- if true -%}\n  {%+ endif +%}{% if true -%}{% for i in range(2) +%}{% macro m() -%}{{- i -}}{%- endmacro %}{{ m() }}{% endfor %}{% endif %}",
    "{% filter upper %}{% set x = 1 %}{% endfilter %}{{ x is defined }} {% set y %}{% set x = 1 %}{% endset %}{{ x is defined }}",
    "[{{ 'ab'|center(7) }}] [{{ 'abc'|center(6) }}] {{ 'one two, three_x é'|wordcount }} {{ 'hello big world'|truncate(9, leeway=0) }} {{ 'hello big world'|truncate(9, true, leeway=0) }} {{ 'short'|truncate(3, end='', leeway=2) }}",
    "{{ [{'a': 1}]|unique|list }}",
    "{% if false %}{{ x|nosuchfilter }}{% endif %}ok",
    "{% if false %}{{ x is nosuchtest }}{% endif %}ok",
    "{{ user|attr('name') }} {{ range(7)|batch(3)|list }} {{ range(5)|batch(2, 'x')|list }}",
    # groupby: (grouper, list) tuples, case-insensitive by default, dotted and index keys
    "{% for g in items|groupby('t', default='z') %}{{ g.grouper }}:{% for i in g.list %}{{ i.n }}{% endfor %};{% endfor %}",
    "{{ items|groupby('t') }}",
    "{{ [{'a': 'B', 'v': 1}, {'a': 'b', 'v': 2}, {'a': 'A', 'v': 3}]|groupby('a') }}",
    "{{ [{'a': 'B', 'v': 1}, {'a': 'b', 'v': 2}, {'a': 'A', 'v': 3}]|groupby('a', case_sensitive=true) }}",
    "{% for k, v in [{'x': {'y': 2}}, {'x': {'y': 1}}, {'x': {'y': 2}}]|groupby('x.y') %}{{ k }}={{ v|length }} {% endfor %}",
    "{{ [[2, 'a'], [1, 'b'], [2, 'c']]|groupby(0) }} {{ (items|groupby('n'))[0].list }} {{ items|groupby('n')|map(attribute='grouper')|list }}",
    "{{ [{'k': 1}, {'k': 'a'}]|groupby('k') }}",
    "{{ items|groupby('n')|length }} {{ (items|groupby('n'))[1][0] }}",
    # slice: columns, fill_with
    "{{ range(10)|slice(3)|list }} {{ range(10)|slice(3, 'x')|list }} {{ [1, 2]|slice(4)|list }} {{ [1, 2]|slice(4, 0)|list }}",
    "{{ []|slice(2)|list }} {{ 'abcde'|slice(2)|list }} {% for col in items|slice(2) %}[{% for i in col %}{{ i.n }}{% endfor %}]{% endfor %}",
    "{{ range(3)|slice(0)|list }}",
    # wordwrap: textwrap.wrap per line
    "{{ 'The quick brown fox jumps over the lazy dog'|wordwrap(10) }}",
    "{{ 'a well-known state-of-the-art long-running thing'|wordwrap(12) }}|{{ 'a well-known state-of-the-art long-running thing'|wordwrap(12, break_on_hyphens=false) }}",
    "{{ 'supercalifragilisticexpialidocious word'|wordwrap(10) }}|{{ 'supercalifragilisticexpialidocious word'|wordwrap(10, false) }}",
    "{{ 'line one is here\nline two\n\nend\r\nlast'|wordwrap(6) }}",
    "{{ 'x  y   z'|wordwrap(3, wrapstring='|') }}|{{ '  leading spaces here'|wordwrap(8, wrapstring='|') }}|{{ 'trailing   '|wordwrap(4, wrapstring='|') }}",
    "{{ 'em--dash words--here ok'|wordwrap(5, wrapstring='|') }}|{{ 'aaa-bbb-ccc-ddd'|wordwrap(6, wrapstring='|') }}|{{ '--x-- -y- a-b-c'|wordwrap(3, wrapstring='|') }}",
    "{{ 'h\u00e9llo w\u00f6rld \u2713 \u00fcn\u00efcode'|wordwrap(7, wrapstring='|') }}|{{ 'tab\there  and   spaces'|wordwrap(4, wrapstring='|') }}",
    "{{ 'abc'|wordwrap(0) }}",
    "{{ 'one two three four five six seven'|wordwrap }}|{{ 'x-yy-zzz two-three'|wordwrap(4, wrapstring='|') }}",
    "{{ 123456|wordwrap(3) }}",
    "a{% raw %}{{ x }}{% if %}{% endraw %}b",
    "  {% raw %}\n  {{ x }}\n  {% endraw %}\nc",
    "a {%- raw -%}  {{ y }}  {%- endraw -%} b",
    "{% raw %}x{%+ endraw +%}\ny",
    "{% raw %}never closed",
    "{% macro f(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ f(1, 2, 3, x=4) }}|{{ f(0) }}",
    "{% macro f(a) %}{{ a }}{{ kwargs }}{% endmacro %}{{ f(1, 2) }}",
    "{% macro f(a) %}{{ a }}{{ varargs }}{% endmacro %}{{ f(1, y=2) }}",
    # set
    "{% set x %}a{{ 1 }}b{% endset %}[{{ x }}]",
    "{% set x | upper %}abc{% endset %}{{ x }}",
    "{% filter upper %}abc{{ 'd' }}{% endfilter %}",
    "{% filter trim %}  \n abc \n {% endfilter %}|",
    "{% set a, b = 1, 2 %}{{ a }}{{ b }}",
    # expressions
    "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 'ab' * 3 }} {{ 1 + 2.5 }} {{ 3 * [1] }}",
    "{{ 'a' ~ 1 ~ none ~ true ~ undefined_thing ~ [1] }}",
    "[{{ 1 if false }}]|{{ 'y' if true else 'n' }}",
    "{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }}",
    "{{ 'b' in 'abc' }} {{ 2 not in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 'x' in undefined_thing }}",
    "{{ not true and false or true }} {{ none or 'd' }} {{ 0 and 1 }} {{ 1 and 'x' }}",
    "{{ [1, 2, 3][1:] }} {{ 'hello'[::-1] }} {{ [1, 2, 3][-1] }} {{ 'héllo'[1:3] }} {{ [1, 2, 3, 4, 5][1:4:2] }} {{ 'abc'[-2:] }}",
    "{{ {'a': 1, 'b': [1, 'x', none, true, 1.5]} }}",
    "{{ ('a',) }} {{ (1, 2) }} {{ () }}",
    "{{ 1.0 }} {{ 0.1 + 0.2 }} {{ 1e20 }} {{ 3.0e-5 }} {{ 123456789.0 * 10 }} {{ 1.5e16 }} {{ -0.0001 }}",
    "{{ \"it's\" }} {{ [\"it's\", 'a\"b', 'x\\ny', '\\\\'] }}",
    "[{{ nothing }}][{{ nothing | default('d') }}]{{ nothing is defined }}{{ user.missing is defined }}",
    "{{ none }}{{ true }}{{ True }}{{ None }}",
    "{{ user.name }} {{ user['tags'][1] }} {{ user.tags.0 }} {{ items[0].t }}",
    "{{ 'a' 'b' }}",
    "{{ '\\u00e9\\x41\\t|' }}",
    "{{ -num }} {{ num - -1 }} {{ -f|abs }}",
    "{{ user == {'tags': ['a', 'b'], 'name': 'Ann'} }} {{ 1 == 1.0 }} {{ true == 1 }} {{ none == none }}",
    "{{ [1, 2] + [3] }} {{ 'a' + 'b' }}",
    # filters
    "[{{ s|trim }}] [{{ 'xxaxx'|trim('x') }}] [{{ none_v|trim }}]",
    "{{ words|join(', ') }} {{ [1, 2]|join }} {{ items|join('-', attribute='n') }}",
    "{{ uni|length }} {{ words|count }} {{ user|length }} {{ undefined_thing|length }}",
    "{{ words|first }} {{ words|last }} {{ 'abc'|first }} [{{ []|first }}]",
    "{{ items|map(attribute='t')|list }} {{ items|map(attribute='t', default='z')|join }} {{ words|map('upper')|join }}",
    "{{ items|selectattr('t', 'equalto', 'a')|list }} {{ items|rejectattr('t', 'defined')|list }} {{ items|selectattr('t')|list|length }}",
    "{{ range(10)|select('odd')|list }} {{ range(5)|reject('even')|list }} {{ [0, 1, '', 'a']|select|list }}",
    "{% for k, v in user|items %}{{ k }}:{{ v }};{% endfor %}",
    "{{ 42|string }}{{ none|string }} {{ '42'|int + 1 }} {{ 'x'|int }} {{ '3.5'|float }} {{ 3.9|int }} {{ 'x'|int(7) }}",
    "{{ 'abc'|list }} {{ user|list }}",
    "{{ user|tojson }} {{ items|tojson(indent=2) }}",
    "{{ {'a': 'é\"\\n', 'b': [], 'c': {}, 'd': [1.5, none, true]}|tojson }}",
    "{{ {'b': 1, 'a': {'d': 1, 'c': 2}}|tojson(sort_keys=true) }} {{ [1, {'a': 2}]|tojson(separators=(',', ':')) }}",
    "{{ {'a': [1, {'b': []}]}|tojson(indent=4) }}",
    "{{ 'é✓'|tojson(ensure_ascii=true) }} {{ '\\x01'|tojson }}",
    "{{ 'hello world'|upper }} {{ 'HeLLo'|lower }} {{ 'hello world'|capitalize }} {{ 'hello wORLD'|title }}",
    "{{ 'aaa'|replace('a', 'b') }} {{ 'aaa'|replace('a', 'b', 2) }} {{ 'abc'|replace('', '-') }}",
    "{{ words|unique|list }} {{ words|unique(case_sensitive=true)|list }}",
    "{{ [1, 2, 3]|sum }} {{ items|sum(attribute='n') }} {{ -3|abs }} {{ 2.567|round(2) }} {{ 2.5|round }} {{ 3|round }}",
    "{{ 'a\\nb\\n\\nc'|indent }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb\\n'|indent(2, blank=true) }}|{{ 'x\\n'|indent(first=true) }}",
    "{{ none_v|default('d') }} {{ ''|default('d', true) }} {{ 0|d('z', boolean=true) }}",
    "{{ '<a&\"\\'>'|escape }} {{ ('x'|safe + '<') }} {{ '<'|safe ~ '<' }} {{ '<' + '>'|safe }}",
    "{{ [3, 1, 2]|reverse|list }} {{ 'abc'|reverse }}",
    # tests
    "{{ 'a' is string }}{{ user is mapping }}{{ words is iterable }}{{ 3 is number }}{{ words is sequence }}{{ true is boolean }}{{ 3 is integer }}{{ 3.0 is float }}{{ none is none }}",
    "{{ 3 is string }}{{ words is mapping }}{{ 3 is iterable }}{{ 'a' is number }}{{ 1 is boolean }}{{ 3.0 is integer }}{{ 3 is float }}{{ 0 is none }}{{ undefined_thing is iterable }}",
    "{{ 3 is odd }}{{ 3 is even }}{{ true is true }}{{ 1 is true }}{{ false is false }}{{ 2 is equalto 2 }}{{ 2 is eq(3) }}{{ x is undefined }}{{ 'a' is not none }}",
    "{{ 5 is divisibleby 5 }}{{ 'abc' is lower }}{{ 3 is gt 2 }}{{ 3 is in [1, 3] }}",
    # methods
    "[{{ s.strip() }}] [{{ 'xyhixy'.strip('xy') }}] [{{ s.lstrip() }}] [{{ s.rstrip() }}] [{{ '..a..'.rstrip('.') }}]",
    "{{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'x</think>y'.split('</think>')[-1] }}",
    "{{ 'hello'.startswith('he') }} {{ 'hello'.endswith(('x', 'lo')) }} {{ 'hello'.replace('l', 'L') }} {{ 'hi'.upper() }} {{ 'HI'.lower() }}",
    "{{ '{} and {}'.format(1, 'b') }} {{ '-'.join(['a', 'b']) }} {{ 'abc'.find('c') }} {{ 'abca'.count('a') }} {{ 'ab cd'.title() }}",
    "{{ user.get('name') }} {{ user.get('x', 'dflt') }} {{ user.get('x') }} {{ user.keys()|list }} {{ user.values()|list }}",
    "{{ {'items': 1}.items is defined }} {{ {'items': 1}['items'] }}",
    # printf-style formatting, sorting, loop.cycle, Qwen3/Mistral-style idioms
    "{{ '%s-%d' % ('a', 3) }} {{ '%.2f'|format(3.14159) }} {{ '%s'|format('x') }} {{ '%5s|%-4d|%03d' % ('ab', 7, 5) }} {{ '%(a)s' % {'a': 1} }} {{ '100%%' % () }}",
    "{{ {'b': 1, 'A': 2, 'c': 0}|dictsort }} {{ {'b': 1, 'A': 2}|dictsort(by='value', reverse=true) }}",
    "{{ [3, 1, 2]|max }} {{ [3, 1, 2]|min }} {{ [3, 1, 2]|sort }} {{ words|sort }} {{ words|sort(case_sensitive=true) }} {{ items|sort(attribute='n', reverse=true)|map(attribute='n')|list }} {{ ['b', 'B']|max }}",
    "{% for x in range(5) %}{{ loop.cycle('a', 'b') }}{% endfor %}",
    "{{ words[::-1]|join }} {{ (words|length - 1) }} {{ items|map(attribute='n')|select('gt', 1)|list }}",
    "{%- set ns = namespace(multi=true, last=items|length - 1) %}{%- for m in items[::-1] %}{%- set idx = (items|length - 1) - loop.index0 %}{%- if ns.multi and m.t is defined %}{%- set ns.multi = false %}{%- set ns.last = idx %}{%- endif %}{%- endfor %}{{ ns.last }}",
    "{% set c = 'a<think>x</think>\\n\\nb' %}{{ c.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') }}|{{ c.split('</think>')[-1].lstrip('\\n') }}",
    "{{ items|selectattr('t', 'in', ['a', 'x'])|list }} {{ items|selectattr('n', 'ge', 2)|map(attribute='n')|list }}",
    "{{ 1 ~ 2.0 }} {{ -3 // 2 }} {{ 3.5 // 1 }} {{ 2 ** -1 }} {{ 10 % 3.5 }} {{ (1, 2)|list }} {{ 5|string|length }}",
    "{{ user.tags|string }} {{ user.name.upper() }} {{ 'abc'.startswith('') }} {{ '{\"a\": 1}'|tojson }}",
    "{% set x = namespace() %}{% set x.a = 1 %}{{ x.a }}{{ x.b is defined }}",
    "{{ ('<'|safe)|trim }} {{ '<b>'|safe|upper }}",
    "{{ 'x' if none_v is none else 'y' }} {{ 'a' if false else 'b' if true else 'c' }}",
    "{% if s is string and s|trim|length > 0 %}yes{% endif %}",
    "{{ '%s' % [1, 'a'] }} {{ '%r' % 'a' }} {{ '%x %o %e' % (255, 8, 12345.678) }}",
    "{{ '%s %s' % ('a',) }}",
    "{{ '%d' % 'x' }}",
    "[{{ '' % undefined_thing }}][{{ '' % [1] }}][{{ '%s' % {'a': 1} }}][{{ '%s' % undefined_thing }}]",
    "{{ '%s %s' % [1] }}",
    "{{ '' % 'x' }}",
    "{{ 'a b c'.split(maxsplit=1) }} {{ 'a,b,c'.split(sep=',') }} {{ 'a,b,c'.rsplit(',', 1) }} {{ ' a  b c '.rsplit(None, 1) }} {{ 'a,b'.rsplit(',') }} {{ 'x'.rsplit(',', 2) }} {{ ',a,'.rsplit(',', 5) }}",
    "{{ '{a}-{b}-{0}'.format('z', a=1, b='x') }} {{ [1, 2, 1].count(1) }} {{ ['a', 'b'].index('b') }} {{ ('a', 'b').index('a') }}",
    "{{ ['a'].index('zz') }}",
    "{{ 'a'.upper(x=1) }}",
    # dict keys of any hashable type (Python's hash equality: 1 == 1.0 == True)
    "{% set d = {1: 'a', 2.5: 'b', none: 'c', true: 'd', (1, 'x'): 'e'} %}{{ d }} {{ d[1] }}{{ d[1.0] }}{{ d[2.5] }}{{ d[none] }}{{ d[(1, 'x')] }} {{ d|length }}",
    "{% set d = {16: 'x', 4: 'y', 1024: 'z'} %}{% for k, v in d|dictsort %}{{ k }}={{ v }};{% endfor %}{{ 4 in d }}{{ 5 in d }}{{ d.get(16) }}{{ d.get(3, '-') }}{{ d.keys()|list }}",
    "{{ {1: 'a', 'b': none, false: 2}|tojson }} {{ {0: 1, 0.0: 2} }} {{ dict({3: 4}, k=1) }}",
    "{% set d = {'a': 1} %}{{ d[3] is defined }}{{ d[none] is defined }}",
    "{{ {[1]: 2} }}",
    "{{ {'a': 1}[[1]] }}",
    # the rarer str methods
    "{{ 'Hello'.removeprefix('He') }} {{ 'Hello'.removeprefix('x') }} {{ 'a.txt'.removesuffix('.txt') }} {{ 'ab'.removesuffix('') }}",
    "{{ 'a-b-c'.rfind('-') }} {{ 'héllo'.index('l') }} {{ 'abcabc'.rindex('b') }} {{ 'x'.rfind('y') }}",
    "{{ 'key=value=x'.partition('=') }} {{ 'k=v=x'.rpartition('=') }} {{ 'abc'.partition('z') }} {{ 'abc'.rpartition('z') }}",
    "{{ 'ab1'.isalnum() }}{{ 'a b'.isalnum() }}{{ 'ABC'.isupper() }}{{ 'AbC'.isupper() }}{{ 'abc1'.islower() }}{{ '12'.isnumeric() }}{{ '1.2'.isdecimal() }}{{ ''.islower() }}",
    "[{{ '42'.zfill(5) }}][{{ '-42'.zfill(5) }}][{{ 'ab'.ljust(5, '*') }}][{{ 'ab'.rjust(5) }}][{{ 'ab'.center(5, '-') }}][{{ 'abc'.center(6) }}][{{ 'x'.ljust(0) }}][{{ 'ÄB'.casefold() }}]",
    "{{ 'abc'.index('z') }}",
    "{{ 'abc'.partition('') }}",
    # errors (Jinja2 raises)
    "{{ raise_exception('boom') }}",
    "{% if true %}{{ raise_exception('nested ' ~ 1) }}{% endif %}",
    "{% if x %}",
    "{{ 1 + }}",
    "{% endfor %}",
    "{% for %}{% endfor %}",
    "{{ 1|nope }}",
    "{{ 'abc }}",
    "{{ 'a' + 1 }}",
    "{% for x in none %}{% endfor %}",
    "{{ undefined_thing.y }}",
    "{{ undefined_thing + 'a' }}",
    "{{ items|map(attribute='n')|tojson }}",
    "{{ items|map(attribute='n')|length }}",
    "{{ 1 / 0 }}",
    "{% set l = [] %}{{ l.append(1) }}",
    "{{ 1 < 'a' }}",
    "{% set x = 1 %}{% set x.y = 2 %}",
    "{{ none_v.x.y }}",
    "{% macro f(a) %}{% endmacro %}{{ f(1, 2) }}",
    "{{ f() }}",
    "{% break %}",
    # guards (our limits; Jinja2 has none or crashes differently)
    (GUARD, "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}"),
    (GUARD, "{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}"),
    (GUARD, "{{ 'x' * 10000000000 }}"),
    (GUARD, "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}"),
    (GUARD, "{{ " + "(" * 1000 + "1" + ")" * 1000 + " }}"),
    (GUARD, "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s|length }}"),
    (GUARD, "{{ range(1000000000)|length }}"),
    (GUARD, "{% set big = range(100000)|list %}{% for i in range(100000) %}{% if -1 in big %}x{% endif %}{% endfor %}"),
    (GUARD, "{{ range(100000)|unique|list|length }}"),
    (GUARD, "{% set ns = namespace(x=[]) %}{% for i in range(100000) %}{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x == ns.x }}{{ ns.x }}{{ ns.x|tojson }}"),
    (GUARD, "{% if true %}" * 300 + "x" + "{% endif %}" * 300),
]


def make_env():
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                                       extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = lambda x, ensure_ascii=False, indent=None, separators=None, sort_keys=False: \
        json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def raise_exception(msg):
        raise TemplateError(msg)
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: "26 Jul 2024"
    return env


def c_str(s):
    out = '"'
    for b in s.encode("utf-8"):
        ch = chr(b)
        if ch == '"': out += '\\"'
        elif ch == '\\': out += '\\\\'
        elif ch == '\n': out += '\\n'
        elif ch == '\t': out += '\\t'
        elif ch == '\r': out += '\\r'
        elif 32 <= b < 127 and ch != '?': out += ch
        else: out += '\\%03o' % b
    return out + '"'


def main():
    env = make_env()
    rows = []
    for case in CASES:
        guard = isinstance(case, tuple)
        src = case[1] if guard else case
        if guard:
            rows.append((src, 1, None))
            continue
        try:
            out = env.from_string(src).render(**CTX)
            rows.append((src, 0, out))
        except TemplateError as e:
            is_raise = type(e) is TemplateError
            rows.append((src, 2 if is_raise else 1, str(e) if is_raise else None))
        except Exception:
            rows.append((src, 1, None))
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "chat_cases.h"), "w") as f:
        f.write("/* chat_cases.h - GENERATED by chat_cases_gen.py from Jinja2 %s; do not edit.\n" % jinja2.__version__)
        f.write(" * expect: 0 = renders `text`, 1 = fails, 2 = raise_exception with message `text`. */\n")
        f.write("static const char *const chat_case_context =\n    %s;\n\n" % c_str(json.dumps(CTX, ensure_ascii=False)))
        f.write("static const struct { const char *src; int expect; const char *text; } chat_cases[] = {\n")
        for src, kind, text in rows:
            f.write("    {%s,\n     %d, %s},\n" % (c_str(src), kind, c_str(text) if text is not None else "NULL"))
        f.write("};\n")
    print("%d cases" % len(rows))


main()
