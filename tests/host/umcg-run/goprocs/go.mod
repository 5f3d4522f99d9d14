// SPDX-License-Identifier: GPL-2.0

module umcg/tests/goprocs

go 1.22
