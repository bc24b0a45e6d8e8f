"""SequenceField stays out of ModelForms and admin add forms, like AutoField; editable=True brings it back."""

import pytest
from django import forms
from django.contrib import admin
from django.contrib.auth.models import User
from django.db import models
from django.test import override_settings
from django.test.utils import isolate_apps
from django.urls import path

from django_segment_seq import SequenceField
from tests.testapp.models import DailyOrder, EditableTicket, Order

pytestmark = pytest.mark.django_db(transaction=True)

site = admin.AdminSite(name="forms_admin")


class OrderAdmin(admin.ModelAdmin):
    readonly_fields = ["order_no"]


site.register(Order, OrderAdmin)
site.register(DailyOrder)
site.register(EditableTicket)
urlpatterns = [path("shop-admin/", site.urls)]


def test_model_form_leaves_the_number_out_and_the_save_fills_it():
    form_class = forms.modelform_factory(Order, fields="__all__")
    assert list(form_class.base_fields) == ["note"]
    order = form_class({"note": "from a form"}).save()
    assert order.order_no == 1
    assert "order_no" not in forms.modelform_factory(DailyOrder, fields="__all__").base_fields


@isolate_apps("tests.testapp")
def test_editable_true_brings_it_back():
    class Manual(models.Model):
        number = SequenceField("manual", editable=True)

        class Meta:
            app_label = "testapp"

    field = forms.modelform_factory(Manual, fields="__all__").base_fields["number"]
    assert isinstance(field, forms.IntegerField) and not field.required


@isolate_apps("tests.testapp")
def test_deconstruct_names_editable_only_when_true():
    class Both(models.Model):
        default = SequenceField("a")
        shown = SequenceField("b", editable=True)
        text = SequenceField("c", format="C{value:04d}")

        class Meta:
            app_label = "testapp"

    fields = {f.name: f.deconstruct()[3] for f in Both._meta.local_fields if f.name != "id"}
    assert fields["default"] == {"sequence_name": "a"}
    assert fields["shown"] == {"sequence_name": "b", "editable": True}
    assert "editable" not in fields["text"]
    rebuilt = SequenceField(**fields["default"])
    assert rebuilt.editable is False


@pytest.fixture
def admin_client(client):
    client.force_login(User.objects.create_superuser("admin", "admin@example.com", "pw"))
    return client


@override_settings(ROOT_URLCONF=__name__)
def test_admin_add_form_has_no_number_and_the_change_view_shows_it(admin_client):
    page = admin_client.get("/shop-admin/testapp/order/add/").content.decode()
    assert 'name="note"' in page and 'name="order_no"' not in page
    response = admin_client.post("/shop-admin/testapp/order/add/", {"note": "admin", "order_no": "77"})
    assert response.status_code == 302
    order = Order.objects.get()
    assert order.order_no == 1  # a number typed into the request is ignored
    change = admin_client.get(f"/shop-admin/testapp/order/{order.pk}/change/").content.decode()
    assert 'name="order_no"' not in change
    assert '<div class="readonly">1</div>' in change


@override_settings(ROOT_URLCONF=__name__)
def test_admin_without_readonly_fields_leaves_it_out_of_both_views(admin_client):
    page = admin_client.get("/shop-admin/testapp/dailyorder/add/").content.decode()
    assert 'name="order_no"' not in page
    assert admin_client.post("/shop-admin/testapp/dailyorder/add/", {}).status_code == 302
    assert DailyOrder.objects.get().order_no.startswith("OD")


def test_an_emptied_number_on_a_change_form_keeps_the_stored_one():
    """editable=True shows the numbers; clearing them on a change form neither erases nor breaks them."""
    ticket = EditableTicket.objects.create(note="first")
    form_class = forms.modelform_factory(EditableTicket, fields="__all__")
    form = form_class({"note": "edited", "number": "", "code": ""}, instance=ticket)
    assert form.is_valid(), form.errors
    form.save()
    ticket.refresh_from_db()
    assert (ticket.note, ticket.number, ticket.code) == ("edited", 1, "T0001")


def test_an_explicit_new_number_on_a_change_form_is_written():
    ticket = EditableTicket.objects.create()
    form_class = forms.modelform_factory(EditableTicket, fields="__all__")
    form_class({"note": "", "number": "500", "code": "T0500"}, instance=ticket).save()
    ticket.refresh_from_db()
    assert (ticket.number, ticket.code) == (500, "T0500")


def test_an_empty_number_on_an_add_form_is_filled_at_save():
    form_class = forms.modelform_factory(EditableTicket, fields="__all__")
    ticket = form_class({"note": "new", "number": "", "code": ""}).save()
    assert (ticket.number, ticket.code) == (1, "T0001")


@override_settings(ROOT_URLCONF=__name__)
def test_the_admin_change_page_keeps_an_emptied_number(admin_client):
    ticket = EditableTicket.objects.create(note="first")
    response = admin_client.post(
        f"/shop-admin/testapp/editableticket/{ticket.pk}/change/", {"note": "edited", "number": "", "code": ""}
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    ticket.refresh_from_db()
    assert (ticket.note, ticket.number, ticket.code) == ("edited", 1, "T0001")
