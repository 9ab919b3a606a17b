# Carapace: Ceph configuration options as update_ceph_configuration handles them: ceph.conf
# read and edited line by line (comments and order kept), and option values compared by
# their type (the monitors store '1G' of a size as '1073741824', a daemon says 'true' of a
# bool given as 'yes').
#
# Python 3 standard library only.
"""ceph.conf editing and typed comparison of Ceph option values."""

import re

_SECTION = re.compile(r"^\s*\[\s*([^\]]*?)\s*\]\s*$")
_OPTION = re.compile(r"^\s*([^=#;\[\s][^=#;]*?)\s*=\s*(.*?)\s*$")

# Ceph's unit prefixes: SI (powers of 1000) for int and uint (strict_si_cast), IEC (powers of
# 1024) for sizes (strict_iec_cast).
_PREFIXES = "KMGTPE"
_SPAN_SECONDS = {
    "": 1, "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
    "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hr": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400,
    "w": 604800, "wk": 604800, "week": 604800, "weeks": 604800,
}


def option_key(name):
    """How Ceph matches option names: 'osd max backfills', 'osd-max-backfills' and
    'osd_max_backfills' are the same option."""
    return re.sub(r"[\s_-]+", "_", name.strip().lower())


def parse_conf(text):
    """[(section or None, key or None, line)] of a ceph.conf: key is the option key of an
    option line, None for comments, blank lines and section headers."""
    parsed = []
    section = None
    for line in text.splitlines():
        header = _SECTION.match(line)
        if header:
            section = header.group(1)
            parsed.append((section, None, line))
            continue
        option = _OPTION.match(line)
        parsed.append((section, option_key(option.group(1)) if option else None, line))
    return parsed


def conf_value(text, section, name):
    """The value of name in section of a ceph.conf text (the last one, as Ceph reads it), or None."""
    found = None
    for sec, key, line in parse_conf(text):
        if sec == section and key == option_key(name):
            found = _OPTION.match(line).group(2)
    return found


def conf_keys(text):
    """The option keys a ceph.conf sets, in any section."""
    return set(key for _, key, _ in parse_conf(text) if key)


def edit_conf(text, set_options, remove_options):
    """ceph.conf text with each {section, name, value} of set_options set (its line replaced in
    place, or added at the end of its section, the section added at the end when missing) and
    each {section, name} of remove_options removed; comments and the order of the rest kept."""
    lines = parse_conf(text)
    for option in remove_options:
        key = option_key(option["name"])
        lines = [entry for entry in lines if not (entry[0] == option["section"] and entry[1] == key)]
    for option in set_options:
        key = option_key(option["name"])
        wanted = "%s = %s" % (option["name"], option["value"])
        places = [i for i, entry in enumerate(lines) if entry[0] == option["section"] and entry[1] == key]
        if places:
            lines[places[0]] = (option["section"], key, wanted)
            lines = [entry for i, entry in enumerate(lines) if i not in places[1:]]
            continue
        in_section = [i for i, entry in enumerate(lines) if entry[0] == option["section"]]
        if in_section:
            # after the section's last option (its trailing blank lines and comments stay after it)
            last = max([i for i in in_section if lines[i][1]] or [in_section[0]])
            lines.insert(last + 1, (option["section"], key, wanted))
        else:
            if lines and lines[-1][2].strip():
                lines.append((None, None, ""))
            lines.append((option["section"], None, "[%s]" % option["section"]))
            lines.append((option["section"], key, wanted))
    return "".join(line + "\n" for _, _, line in lines)


def _number(text):
    return float(text) if re.search(r"[.eE]", text) else int(text, 10)


def _prefixed(text, base, allow_iec):
    match = re.match(r"^([+-]?\d+(?:\.\d+)?)\s*([KMGTPE]?)(i?)(B?)$", text.strip(), re.IGNORECASE)
    if not match or (match.group(3) and not allow_iec):
        raise ValueError(text)
    number, prefix = match.group(1), match.group(2).upper()
    value = _number(number) * (base ** (_PREFIXES.index(prefix) + 1) if prefix else 1)
    return int(value) if float(value).is_integer() else value


def _span(text, unit_seconds):
    total = 0.0
    rest = text.strip().lower()
    if re.match(r"^[+-]?\d+(?:\.\d+)?$", rest):
        return float(rest)
    for number, unit in re.findall(r"(\d+(?:\.\d+)?)\s*([a-z]*)\s*", rest):
        if unit in ("ms", "msec", "msecs", "millisecond", "milliseconds"):
            total += float(number) / 1000.0 / unit_seconds
        elif unit in _SPAN_SECONDS:
            total += float(number) * _SPAN_SECONDS[unit] / unit_seconds
        else:
            raise ValueError(text)
    if not re.fullmatch(r"(\d+(?:\.\d+)?\s*[a-z]*\s*)+", rest):
        raise ValueError(text)
    return total


def normalize(kind, value):
    """value (text) as a comparable value of the option type kind (Ceph's 'type' of `ceph
    config help`); raises ValueError when it is not one. Types without a number (str, uuid,
    addr, ...) compare as text."""
    text = str(value).strip()
    if kind == "bool":
        lowered = text.lower()
        if lowered in ("true", "yes", "on", "1"):
            return True
        if lowered in ("false", "no", "off", "0"):
            return False
        raise ValueError(text)
    if kind in ("int", "uint"):
        number = _prefixed(text, 1000, False)
        if isinstance(number, float) or (kind == "uint" and number < 0):
            raise ValueError(text)
        return number
    if kind == "size":
        number = _prefixed(text, 1024, True)
        if number < 0:
            raise ValueError(text)
        return int(number)
    if kind == "float":
        return float(text)
    if kind == "secs":
        return _span(text, 1.0)
    if kind == "millisecs":
        return _span(text, 0.001)
    return text


def same_value(kind, a, b):
    """Whether two texts are the same value of the option type kind (text compare when either
    is not one)."""
    try:
        left, right = normalize(kind, a), normalize(kind, b)
    except ValueError:
        return str(a).strip() == str(b).strip()
    if isinstance(left, float) or isinstance(right, float):
        return abs(float(left) - float(right)) <= 1e-9 * max(1.0, abs(float(left)))
    return left == right
