# SPDX-License-Identifier: Apache-2.0
"""Drop-in layers for code written against other sandbox libraries."""
