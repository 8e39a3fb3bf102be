"""The licence filter, de-duplication and manifest of `sparserl.corpus`.

Licence fixtures are the real texts (or the real opening of long ones) of each
licence, written out here, not the classifier's own phrase list.
"""

from __future__ import annotations

import csv
import hashlib
import json

import pytest

from sparserl.corpus import (
    ALLOWED_LICENCES,
    CorpusSource,
    DeclaredDocument,
    LicenceResolver,
    SpdxSyntaxError,
    build_corpus,
    classify_licence_text,
    find_cccl_dir,
    find_spdx_expression,
    leading_comment,
    read_corpus,
    spdx_expression_allowed,
)

MIT_TEXT = """MIT License

Copyright (c) 2024 Jane Doe

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT.
"""

APACHE_TEXT = """
                                 Apache License
                           Version 2.0, January 2004
                        http://www.apache.org/licenses/

   TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION

   1. Definitions.

      "License" shall mean the terms and conditions for use, reproduction,
      and distribution as defined by Sections 1 through 9 of this document.
"""

APACHE_NOTICE = """/*
 *  Copyright 2008-2013 NVIDIA Corporation
 *
 *  Licensed under the Apache License, Version 2.0 (the "License");
 *  you may not use this file except in compliance with the License.
 *  You may obtain a copy of the License at
 *
 *      http://www.apache.org/licenses/LICENSE-2.0
 */
"""

BSD_CLAUSES = """Copyright (c) 2020, The Authors
All rights reserved.

Redistribution and use in source and binary forms, with or without
modification, are permitted provided that the following conditions are met:

1. Redistributions of source code must retain the above copyright notice, this
   list of conditions and the following disclaimer.

2. Redistributions in binary form must reproduce the above copyright notice,
   this list of conditions and the following disclaimer in the documentation
   and/or other materials provided with the distribution.
"""

BSD_3_CLAUSE = """
3. Neither the name of the copyright holder nor the names of its
   contributors may be used to endorse or promote products derived from
   this software without specific prior written permission.
"""

BSD_DISCLAIMER = """
THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS"
AND ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE
IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A PARTICULAR PURPOSE
ARE DISCLAIMED.
"""

BSD2_TEXT = BSD_CLAUSES + BSD_DISCLAIMER
BSD3_TEXT = BSD_CLAUSES + BSD_3_CLAUSE + BSD_DISCLAIMER

ISC_TEXT = """ISC License

Copyright (c) 2004-2010 by Internet Systems Consortium, Inc. ("ISC")

Permission to use, copy, modify, and/or distribute this software for any
purpose with or without fee is hereby granted, provided that the above
copyright notice and this permission notice appear in all copies.

THE SOFTWARE IS PROVIDED "AS IS" AND ISC DISCLAIMS ALL WARRANTIES
"""

CC0_TEXT = """Creative Commons Legal Code

CC0 1.0 Universal

    CREATIVE COMMONS CORPORATION IS NOT A LAW FIRM AND DOES NOT PROVIDE
    LEGAL SERVICES. DISTRIBUTION OF THIS DOCUMENT DOES NOT CREATE AN
    ATTORNEY-CLIENT RELATIONSHIP.
"""

UNLICENSE_TEXT = """This is free and unencumbered software released into the public domain.

Anyone is free to copy, modify, publish, use, compile, sell, or
distribute this software, either in source code form or as a compiled
binary, for any purpose, commercial or non-commercial, and by any
means.

For more information, please refer to <https://unlicense.org>
"""

GPL3_TEXT = """                    GNU GENERAL PUBLIC LICENSE
                       Version 3, 29 June 2007

 Copyright (C) 2007 Free Software Foundation, Inc. <https://fsf.org/>
 Everyone is permitted to copy and distribute verbatim copies
 of this license document, but changing it is not allowed.

                            Preamble

  The GNU General Public License is a free, copyleft license for
software and other kinds of works.
"""

LGPL_NOTICE = """/* This library is free software; you can redistribute it and/or
   modify it under the terms of the GNU Lesser General Public
   License as published by the Free Software Foundation; either
   version 2.1 of the License, or (at your option) any later version. */
"""

NVIDIA_PROPRIETARY_NOTICE = """/*
 * Copyright 1993-2021 NVIDIA Corporation.  All rights reserved.
 *
 * NOTICE TO LICENSEE:
 *
 * These Licensed Deliverables contained herein is PROPRIETARY and
 * CONFIDENTIAL to NVIDIA and is being provided under the terms and
 * conditions of a form of NVIDIA software license agreement.
 */
"""

NCSA_TEXT = """University of Illinois/NCSA
Open Source License

Permission is hereby granted, free of charge, to any person obtaining a copy of
this software and associated documentation files (the "Software"), to deal with
the Software without restriction, including without limitation the rights to
use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies
of the Software, and to permit persons to whom the Software is furnished to do
so, subject to the following conditions:

    * Redistributions of source code must retain the above copyright notice,
      this list of conditions and the following disclaimers.

    * Redistributions in binary form must reproduce the above copyright notice,
      this list of conditions and the following disclaimers in the
      documentation and/or other materials provided with the distribution.

    * Neither the names of the LLVM Team, nor the names of its contributors may
      be used to endorse or promote products derived from this Software without
      specific prior written permission.
"""

KERNEL = """__global__ void scale(float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
"""


def write(path, text: str):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def manifest_rows(out_dir) -> dict[str, dict[str, str]]:
    with open(out_dir / "manifest.csv", newline="") as handle:
        return {row["path"]: row for row in csv.DictReader(handle)}


# ------------------------------------------------------------ classification


@pytest.mark.parametrize(
    "text, expected",
    [
        (MIT_TEXT, {"MIT"}),
        (APACHE_TEXT, {"Apache-2.0"}),
        (APACHE_NOTICE, {"Apache-2.0"}),
        (BSD2_TEXT, {"BSD-2-Clause"}),
        (BSD3_TEXT, {"BSD-3-Clause"}),
        (ISC_TEXT, {"ISC"}),
        (ISC_TEXT.replace("and/or distribute", "and distribute"), {"ISC"}),
        (CC0_TEXT, {"CC0-1.0"}),
        (UNLICENSE_TEXT, {"Unlicense"}),
        (GPL3_TEXT, {"GPL"}),
        (LGPL_NOTICE, {"LGPL"}),
        (NVIDIA_PROPRIETARY_NOTICE, {"proprietary"}),
        (NCSA_TEXT, {"NCSA"}),
        (MIT_TEXT + "\n\n" + BSD3_TEXT, {"MIT", "BSD-3-Clause"}),
        ("Copyright (c) 2020 NVIDIA. All rights reserved.", set()),
        ("Use of this source code is governed by a BSD-style license.", set()),
    ],
)
def test_classify_licence_text(text, expected):
    assert classify_licence_text(text) == expected


def test_classifier_ignores_comment_decoration_and_rewrapping():
    starred = "\n".join(" * " + line for line in BSD3_TEXT.split())
    assert classify_licence_text(starred) == {"BSD-3-Clause"}
    slashed = "\n".join("// " + line for line in MIT_TEXT.splitlines())
    assert classify_licence_text(slashed) == {"MIT"}


def test_only_the_seven_permissive_licences_are_allowed():
    assert ALLOWED_LICENCES == {
        "MIT",
        "Apache-2.0",
        "BSD-2-Clause",
        "BSD-3-Clause",
        "CC0-1.0",
        "Unlicense",
        "ISC",
    }


@pytest.mark.parametrize(
    "expression, allowed",
    [
        ("MIT", True),
        ("mit", True),
        ("Apache-2.0 WITH LLVM-exception", True),
        ("BSD-3-Clause", True),
        ("MIT OR Apache-2.0", True),
        ("MIT OR GPL-3.0-only", True),
        ("GPL-3.0-only OR MIT", True),
        ("MIT AND GPL-3.0-only", False),
        ("MIT AND BSD-2-Clause", True),
        ("(MIT OR GPL-2.0-only) AND BSD-3-Clause", True),
        ("(MIT OR GPL-2.0-only) AND LGPL-2.1-only", False),
        ("Apache-2.0+", True),
        ("GPL-2.0-only WITH Classpath-exception-2.0", False),
        ("Apache-2.0 WITH Some-unknown-exception", False),
        ("LicenseRef-NVIDIA-SOFTWARE-LICENSE", False),
        ("BSL-1.0", False),
    ],
)
def test_spdx_expression_allowed(expression, allowed):
    assert spdx_expression_allowed(expression) is allowed


@pytest.mark.parametrize("expression", ["", "MIT AND", "(MIT", "MIT OR OR BSD-2-Clause", "MIT )"])
def test_malformed_spdx_expression_raises(expression):
    with pytest.raises(SpdxSyntaxError, match="SPDX expression"):
        spdx_expression_allowed(expression)


def test_find_spdx_expression():
    assert find_spdx_expression("/* SPDX-License-Identifier: MIT */\nint x;") == "MIT"
    text = "// SPDX-FileCopyrightText: 2024 NVIDIA\n// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception\n"
    assert find_spdx_expression(text) == "Apache-2.0 WITH LLVM-exception"
    two = "// SPDX-License-Identifier: MIT\n// SPDX-License-Identifier: GPL-2.0-only\n"
    assert spdx_expression_allowed(find_spdx_expression(two)) is False
    assert find_spdx_expression("\n" * 40 + "// SPDX-License-Identifier: MIT\n") is None


def test_leading_comment_stops_at_code():
    text = "// one\n/* two\n three */\n\n#pragma once\n// not a header\nint x;"
    assert leading_comment(text) == "// one\n/* two\n three */"
    assert leading_comment("int x; // MIT") == ""


# ------------------------------------------------------------ licence decisions


def test_spdx_line_beats_licence_file(tmp_path):
    root = tmp_path / "src"
    write(root / "LICENSE", GPL3_TEXT)
    kept = write(root / "kept.cu", "// SPDX-License-Identifier: MIT\n" + KERNEL)
    write(root / "mit" / "LICENSE", MIT_TEXT)
    rejected = write(
        root / "mit" / "rejected.cu", "// SPDX-License-Identifier: GPL-3.0-only\n" + KERNEL + "//\n"
    )
    resolver = LicenceResolver(root)
    decision = resolver.decide(kept, kept.read_text())
    assert (decision.licence, decision.origin, decision.allowed) == ("MIT", "spdx", True)
    decision = resolver.decide(rejected, rejected.read_text())
    assert (decision.origin, decision.allowed) == ("spdx", False)


def test_header_notice_beats_licence_file(tmp_path):
    root = tmp_path / "src"
    write(root / "LICENSE", MIT_TEXT)
    path = write(root / "lgpl.cu", LGPL_NOTICE + KERNEL)
    decision = LicenceResolver(root).decide(path, path.read_text())
    assert (decision.licence, decision.origin, decision.allowed) == ("LGPL", "header", False)


def test_nearest_parent_licence_file_applies_and_search_stops_at_root(tmp_path):
    write(tmp_path / "LICENSE", MIT_TEXT)  # above the source root: never read
    root = tmp_path / "src"
    write(root / "LICENSE", GPL3_TEXT)
    write(root / "vendor" / "LICENSE.txt", BSD3_TEXT)
    deep = write(root / "vendor" / "a" / "b" / "deep.cuh", KERNEL)
    top = write(root / "top.cu", KERNEL + "// top\n")
    resolver = LicenceResolver(root)

    decision = resolver.decide(deep, deep.read_text())
    assert (decision.licence, decision.origin) == ("BSD-3-Clause", "file:vendor/LICENSE.txt")
    assert decision.allowed
    decision = resolver.decide(top, top.read_text())
    assert (decision.licence, decision.origin, decision.allowed) == ("GPL", "file:LICENSE", False)

    bare_root = tmp_path / "bare"
    bare = write(bare_root / "x.cu", KERNEL)
    decision = LicenceResolver(bare_root).decide(bare, bare.read_text())
    assert (decision.licence, decision.origin, decision.allowed) == ("", "none", False)


def test_fallback_licence_file_used_only_without_a_nearer_one(tmp_path):
    root = tmp_path / "wheel"
    fallback = write(tmp_path / "dist-info" / "LICENSE", ISC_TEXT)
    plain = write(root / "pkg" / "plain.cu", KERNEL)
    write(root / "pkg" / "vendored" / "COPYING", GPL3_TEXT)
    vendored = write(root / "pkg" / "vendored" / "v.cu", KERNEL + "// v\n")
    resolver = LicenceResolver(root, fallback_licence_file=fallback)
    decision = resolver.decide(plain, plain.read_text())
    assert (decision.licence, decision.origin) == ("ISC", "file:../dist-info/LICENSE")
    assert not resolver.decide(vendored, vendored.read_text()).allowed


def test_unrecognised_licence_file_rejects(tmp_path):
    root = tmp_path / "src"
    write(root / "LICENSE", "All rights reserved. Ask us before using this.")
    path = write(root / "a.cu", KERNEL)
    decision = LicenceResolver(root).decide(path, path.read_text())
    assert (decision.licence, decision.origin, decision.allowed) == ("", "file:LICENSE", False)


# ------------------------------------------------------------ build_corpus


@pytest.fixture
def built(tmp_path):
    """A two-source tree covering keep, duplicate and every kind of rejection."""
    first = tmp_path / "first"
    write(first / "LICENSE", MIT_TEXT)
    write(first / "kernel.cu", KERNEL.replace("\n", "\r\n"))
    write(first / "spaced.cu", KERNEL.replace("  ", "\t").replace("\n", "\n\n"))
    write(first / "other.cuh", "// é ü 日本\n" + KERNEL.replace("scale", "shift"))
    write(first / "notes.py", "print('not CUDA')\n")
    (first / "latin1.h").write_bytes("// caf\xe9\nint x;\n".encode("latin-1"))
    (first / "binary.h").write_bytes(b"int x;\0\0\1")
    write(first / "gpl" / "COPYING", GPL3_TEXT)
    write(first / "gpl" / "copyleft.cu", KERNEL + "// copyleft\n")
    second = tmp_path / "second"
    write(second / "LICENSE", BSD2_TEXT)
    write(second / "kernel.cu", KERNEL)  # same as first/kernel.cu up to whitespace
    write(second / "skipped" / "s.cu", KERNEL + "// excluded\n")
    out = tmp_path / "out"
    sources = [first, CorpusSource("two", second, exclude=("skipped/*",))]
    declared = [
        DeclaredDocument("own/a.cu", KERNEL + "// own\n", "Apache-2.0"),
        DeclaredDocument("own/b.cu", KERNEL + "// other\n", "GPL-2.0-only"),
    ]
    manifest = build_corpus(sources, out, declared=declared, progress=False)
    return tmp_path, out, manifest


def test_build_corpus_keeps_dedups_and_rejects(built):
    tmp_path, out, manifest = built
    rows = manifest_rows(out)
    status = {path: row["status"] for path, row in rows.items()}
    assert status == {
        "first/binary.h": "rejected",
        "first/gpl/copyleft.cu": "rejected",
        "first/kernel.cu": "kept",
        "first/latin1.h": "rejected",
        "first/other.cuh": "kept",
        "first/spaced.cu": "duplicate",
        "two/kernel.cu": "duplicate",
        "own/a.cu": "kept",
        "own/b.cu": "rejected",
    }
    assert rows["first/spaced.cu"]["note"] == "duplicate of first/kernel.cu"
    assert rows["first/binary.h"]["note"].startswith("binary")
    assert rows["first/latin1.h"]["note"].startswith("not UTF-8")
    assert rows["first/gpl/copyleft.cu"]["licence"] == "GPL"
    assert rows["own/a.cu"]["licence_source"] == "declared"
    assert [entry.path for entry in manifest.kept()] == [
        "first/kernel.cu",
        "first/other.cuh",
        "own/a.cu",
    ]


def test_manifest_and_corpus_describe_the_files_exactly(built):
    tmp_path, out, manifest = built
    rows = manifest_rows(out)
    for name in ["kernel.cu", "other.cuh", "gpl/copyleft.cu", "latin1.h"]:
        data = (tmp_path / "first" / name).read_bytes()
        row = rows[f"first/{name}"]
        assert row["sha256"] == hashlib.sha256(data).hexdigest()
        assert int(row["bytes"]) == len(data)
    assert rows["first/kernel.cu"]["licence"] == "MIT"
    assert rows["first/kernel.cu"]["licence_source"] == "file:LICENSE"

    records = {record.path: record for record in read_corpus(out)}
    assert list(records) == ["first/kernel.cu", "first/other.cuh", "own/a.cu"]
    assert (
        records["first/kernel.cu"].text == (tmp_path / "first" / "kernel.cu").read_bytes().decode()
    )
    assert "\r\n" in records["first/kernel.cu"].text
    assert records["first/other.cuh"].text.startswith("// é ü 日本\n")

    summary = json.loads((out / "summary.json").read_text())
    assert summary == manifest.summary()
    kept_bytes = sum(int(rows[path]["bytes"]) for path in records)
    assert summary["by_status"]["kept"] == {"files": 3, "bytes": kept_bytes}
    assert summary["by_licence"]["MIT"]["files"] == 2
    assert summary["by_source"]["two"] == {"duplicate": {"files": 1, "bytes": len(KERNEL)}}


def test_build_corpus_rejects_a_missing_source(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a folder"):
        build_corpus([tmp_path / "absent"], tmp_path / "out", progress=False)


def test_read_corpus_errors_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="corpus.jsonl"):
        list(read_corpus(tmp_path))
    (tmp_path / "corpus.jsonl").write_text(
        '{"path": "a", "licence": "MIT", "sha256": "x", "text": ""}\n[1]\n'
    )
    with pytest.raises(ValueError, match="line 2"):
        list(read_corpus(tmp_path))


# ------------------------------------------------------------ the real CCCL headers


@pytest.fixture(scope="module")
def cccl():
    found = find_cccl_dir()
    if found is None:
        pytest.skip("no CUDA install with CCCL headers on this machine")
    return found


def test_real_cccl_headers_are_allowed(cccl):
    resolver = LicenceResolver(cccl)
    for relative in ["cub/warp/warp_reduce.cuh", "thrust/transform.h", "cuda/std/atomic"]:
        path = cccl / relative
        if path.is_file():
            decision = resolver.decide(path, path.read_text())
            assert decision.allowed, (relative, decision)


def test_real_cub_folder_builds(cccl, tmp_path):
    manifest = build_corpus([cccl / "cub"], tmp_path, progress=False)
    kept = manifest.kept()
    assert len(kept) > 100
    assert {entry.licence for entry in kept} <= {
        "BSD-3-Clause",
        "Apache-2.0",
        "Apache-2.0 WITH LLVM-exception",
        "Apache-2.0 AND BSD-2-Clause",
    }


def test_real_nvidia_proprietary_header_is_recognised(cccl):
    header = cccl.parent / "cooperative_groups.h"
    if not header.is_file():
        pytest.skip(f"{header} not present")
    assert classify_licence_text(leading_comment(header.read_text())) == {"proprietary"}
