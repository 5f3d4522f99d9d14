// SPDX-License-Identifier: GPL-2.0

module umcg/peers

go 1.22
