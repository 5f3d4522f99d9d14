// SPDX-License-Identifier: GPL-2.0

module umcg/peers/native

go 1.22
