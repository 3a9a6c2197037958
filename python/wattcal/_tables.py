"""The executables' CSV tables as Python tables: a pandas.DataFrame when pandas is importable,
else a list of dict records. Cells keep the printed digits the executables write (the same
writer functions made the text); an empty cell (unknown) is None in a record, NaN in a DataFrame."""

import csv
import io
from typing import Any, Dict, List, Optional, Union

# Columns that hold names or flags, never numbers (a workload named "123" stays a string).
_TEXT_COLUMNS = {"workload", "benchmark", "kernel", "capture", "kind", "flags", "measured_flags",
                 "power_source", "clock_reasons", "counters", "counters_kernel", "setting",
                 "time_model", "vf_source"}

Records = List[Dict[str, Any]]


def _pandas():
    try:
        import pandas
    except ImportError:
        return None
    return pandas


def _cell(column: str, text: str) -> Any:
    if column in _TEXT_COLUMNS or column.startswith("capture"):
        return text
    if text == "":
        return None
    try:
        return int(text) if text.lstrip("-").isdigit() else float(text)
    except ValueError:
        return text


def records_from_csv(text: str) -> Records:
    """The rows of a CSV text (its '#' comment lines skipped) as dict records."""
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    reader = csv.DictReader(io.StringIO("\n".join(lines)))
    return [{k: _cell(k, v) for k, v in row.items()} for row in reader]


def table_from_csv(text: str, pandas: Optional[bool] = None) -> Union[Records, Any]:
    """A DataFrame (pandas importable and `pandas` not False) or dict records."""
    records = records_from_csv(text)
    pd = _pandas() if pandas is not False else None
    if pd is None:
        return records
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    header = next(csv.reader([lines[0]])) if lines else []
    return pd.DataFrame.from_records(records, columns=header)


def to_records(table: Any) -> Records:
    """Records from a DataFrame or from records (returned as they are)."""
    if hasattr(table, "to_dict") and hasattr(table, "columns"):
        return table.to_dict(orient="records")
    return list(table)


def to_csv(table: Any) -> str:
    """A DataFrame or records as CSV text (the column order kept); None and NaN as empty cells."""
    if hasattr(table, "to_csv") and hasattr(table, "columns"):
        return table.to_csv(index=False, float_format="%.17g")
    rows = list(table)
    columns: List[str] = []
    for r in rows:
        columns += [k for k in r if k not in columns]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for r in rows:
        writer.writerow([_text(r.get(c)) for c in columns])
    return out.getvalue()


def _text(value: Any) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return ""
    return repr(value) if isinstance(value, float) else str(value)
