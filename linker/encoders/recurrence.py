"""One direction of an ``nn.LSTM`` layer run by this package's own loop (BNE's character and word BiLSTMs,
:mod:`linker.encoders.bne`): the caller computes the input projections once per distinct input (a character, a
word) rather than once per time step, which ``nn.LSTM`` cannot do; each step is then one product with the hidden
state, and the rest elementwise."""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["LSTMDirection"]


class LSTMDirection:
    """One direction of an ``nn.LSTM`` layer as this module runs it: the gates reordered to (input, forget,
    output, cell) so that one sigmoid covers three of them, the weights transposed for ``addmm``. Built from
    the live parameters (training: autograd flows through the reordering) or from detached copies
    (inference: built once)."""

    def __init__(self, lstm: nn.LSTM, suffix: str, detach: bool) -> None:
        hidden = lstm.hidden_size
        order = torch.cat([torch.arange(0, 2 * hidden), torch.arange(3 * hidden, 4 * hidden),
                           torch.arange(2 * hidden, 3 * hidden)])  # torch's i, f, g, o -> i, f, o, g
        w_ih, w_hh = getattr(lstm, f"weight_ih_l0{suffix}"), getattr(lstm, f"weight_hh_l0{suffix}")
        bias = getattr(lstm, f"bias_ih_l0{suffix}") + getattr(lstm, f"bias_hh_l0{suffix}")
        if detach:
            w_ih, w_hh, bias = w_ih.detach(), w_hh.detach(), bias.detach()
        self.hidden = hidden
        self.w_ih_t = w_ih[order].T.contiguous()  # [in, 4h]
        self.w_hh_t = w_hh[order].T.contiguous()  # [h, 4h]
        self.bias = bias[order].contiguous()  # [4h]: b_ih + b_hh

    def run(self, inputs: torch.Tensor, reverse: bool, pool: bool, lengths: torch.Tensor | None = None) -> torch.Tensor:
        """The recurrence over ``inputs`` [b, t, 4h], the input projections (bias included), right to left
        when ``reverse``; returns the max over steps of the hidden state (``pool``) or the last hidden
        state, [b, h]. ``lengths`` [b] (>= 1) marks padded rows: a padded step keeps the state as it was,
        which changes neither the last state nor the max; without ``lengths`` no row is padded."""
        h_size, steps = self.hidden, inputs.shape[1]
        if reverse and lengths is not None:  # each row reversed within its own length
            position = torch.arange(steps).unsqueeze(0)
            source = torch.where(position < lengths.unsqueeze(1), lengths.unsqueeze(1) - 1 - position, position)
            inputs = inputs[torch.arange(inputs.shape[0]).unsqueeze(1), source]
            reverse = False
        shortest = int(lengths.min()) if lengths is not None else steps
        # unbind and split, not indexing: their backward assembles one gradient, where each index or slice
        # would zero-fill a gradient of the whole input (a padded batch's [b, t, 4h]) at every step.
        xs = inputs.unbind(1)
        h: torch.Tensor | None = None
        c: torch.Tensor | None = None
        pooled: torch.Tensor | None = None
        for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
            gates = xs[t] if h is None else torch.addmm(xs[t], h, self.w_hh_t)  # [b, 4h]
            sigmoid, cell = gates.split([3 * h_size, h_size], dim=1)
            i_gate, f_gate, o_gate = torch.sigmoid(sigmoid).split(h_size, dim=1)  # input, forget, output
            written = i_gate * torch.tanh(cell)
            c_new = written if c is None else torch.addcmul(written, f_gate, c)
            h_new = o_gate * torch.tanh(c_new)
            if lengths is not None and t >= shortest and h is not None and c is not None:
                valid = (lengths > t).unsqueeze(1)  # [b, 1]
                h_new, c_new = torch.where(valid, h_new, h), torch.where(valid, c_new, c)
            h, c = h_new, c_new
            if pool:
                pooled = h if pooled is None else torch.maximum(pooled, h)
        assert h is not None
        return pooled if pool and pooled is not None else h
